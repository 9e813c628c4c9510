"""The register's sections, one module each; every `build(snapshot)` returns a SectionResult."""
from . import coverage, drivers, gang, isolation, preemption, scheduling, sharing

BUILDERS = (sharing.build, scheduling.build, gang.build, isolation.build, drivers.build, coverage.build,
            preemption.build)

__all__ = ["BUILDERS", "coverage", "drivers", "gang", "isolation", "preemption", "scheduling", "sharing"]
