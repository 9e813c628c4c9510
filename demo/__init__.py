"""The quickstart's demo data: teams, people, clusters, requests, usage and register decisions, loaded through the
apps' own services. It sits above every domain app (it imports them all; nothing imports it)."""
