import json
from pathlib import Path

import yaml
from django.core.exceptions import FieldError, ObjectDoesNotExist, ValidationError
from django.core.management.base import BaseCommand, CommandError

from provisioning.inventory import cluster_declare


class Command(BaseCommand):
    help = (
        "Declare clusters and their node pools from a YAML or JSON file (a list of clusters, each with `pools`, in "
        "the shape of provisioning.demo.CLUSTERS), or the demo's with --demo. Idempotent: pools are matched by name."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", nargs="?", help="YAML or JSON file: a list of clusters, or {clusters: [...]}")
        parser.add_argument("--demo", action="store_true", help="declare the demo clusters of provisioning.demo")

    def handle(self, *args, file, demo, **options):
        if bool(file) == bool(demo):
            raise CommandError("give a file or --demo")
        if demo:
            from provisioning.demo import CLUSTERS

            specs = CLUSTERS
        else:
            try:
                text = Path(file).read_text()
                specs = json.loads(text) if file.endswith(".json") else yaml.safe_load(text)
            except (OSError, ValueError, yaml.YAMLError) as exc:
                raise CommandError(f"cannot read {file}: {exc}") from exc
            if isinstance(specs, dict):
                specs = specs.get("clusters")
            if not isinstance(specs, list) or not all(isinstance(s, dict) and s.get("name") for s in specs):
                raise CommandError("expected a list of clusters, each with a name and a list of pools")
        for spec in specs:
            spec = dict(spec)
            pools = spec.pop("pools", [])
            try:
                cluster = cluster_declare(pools=pools, **spec)
            except ValidationError as exc:
                reasons = ("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())
                           if hasattr(exc, "error_dict") else "; ".join(exc.messages))
                raise CommandError(f"cluster {spec['name']}: {reasons}") from exc
            except ObjectDoesNotExist as exc:
                raise CommandError(f"cluster {spec['name']}: {exc} (is the GPU model in the catalogue?)") from exc
            except (FieldError, TypeError) as exc:
                raise CommandError(f"cluster {spec['name']}: {exc}") from exc
            self.stdout.write(f"cluster {cluster.name} declared: {cluster.pools.count()} pools")
