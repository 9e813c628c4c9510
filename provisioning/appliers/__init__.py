"""Appliers put rendered Kubernetes objects where a cluster picks them up: its API server or a GitOps repository.

Nothing in this package imports Django; the provisioning services build the plain arguments and call it.
"""
