"""The chargeback ledger in the FinOps Foundation's FOCUS format (columns.py maps a line to a row, query.py reads
the lines, export.py writes the CSV). docs/chargeback.md, "FOCUS export"."""
