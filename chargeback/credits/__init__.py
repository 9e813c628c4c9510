"""Credits for GPU time lost to hardware faults (docs/chargeback.md, "Hardware-fault credits"): `health.py` decides
from a pod and what the cluster says about its devices whether its last run failed on an unhealthy device (pure),
`services.py` records the credits and reverses them, `models.py` holds them."""
