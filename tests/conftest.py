pytest_plugins = ["tests.kube.fixtures"]
