"""A simulated Kubernetes API server for development, evaluation and tests (docs/simulated-cluster.md).

`kubesim.server.FakeKubeAPI` serves the Kubernetes API over real HTTPS from a background thread; the tests use it
as the cluster boundary, and the demo runs it as a simulated GPU cluster. The product's own code paths never import
this package (an import-linter contract says so).
"""
