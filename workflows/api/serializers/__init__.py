"""HTTP shapes of the intake API, one module per job: the answers object, the decision, what callers send, a
request as shown, the routing policy. Validation of answers is the questionnaire's (intake.answers); these
serializers only describe and carry it. The names are re-exported here, so callers import from the package."""
from .answers import AnswersSerializer
from .decision import (
    STRATEGY_CHOICES,
    AutoApproveLimitsSerializer,
    BudgetImpactSerializer,
    DecisionSerializer,
    DriverSerializer,
    GangSerializer,
    LeaseSerializer,
    MultiNodeSerializer,
    PreviewSerializer,
    ReasonSerializer,
)
from .inputs import (
    CommentInputSerializer,
    LeaseExtendInputSerializer,
    PreviewInputSerializer,
    RequestCreateInputSerializer,
    RequestTeamField,
    TeamAnswersInputSerializer,
)
from .policy import (
    ClassCountSerializer,
    DecisionChangeSerializer,
    PolicyDiffQuerySerializer,
    PolicyDiffSerializer,
    PolicySignOffInputSerializer,
    PolicyVersionSerializer,
    RuleSerializer,
)
from .requests import (
    AppliedObjectSerializer,
    GangStallSerializer,
    PendingPodSerializer,
    ProvisioningJobSerializer,
    RequestEventSerializer,
    RequestListQuerySerializer,
    RequestListSerializer,
    RequestSerializer,
)

__all__ = [
    "STRATEGY_CHOICES", "AnswersSerializer", "AppliedObjectSerializer", "AutoApproveLimitsSerializer",
    "BudgetImpactSerializer", "ClassCountSerializer", "CommentInputSerializer", "DecisionChangeSerializer",
    "DecisionSerializer", "DriverSerializer", "GangSerializer", "GangStallSerializer", "LeaseExtendInputSerializer",
    "LeaseSerializer", "MultiNodeSerializer", "PendingPodSerializer", "PolicyDiffQuerySerializer",
    "PolicyDiffSerializer", "PolicySignOffInputSerializer", "PolicyVersionSerializer", "PreviewInputSerializer",
    "PreviewSerializer", "ProvisioningJobSerializer", "ReasonSerializer", "RequestCreateInputSerializer",
    "RequestEventSerializer", "RequestListQuerySerializer", "RequestListSerializer", "RequestSerializer",
    "RequestTeamField", "RuleSerializer", "TeamAnswersInputSerializer",
]
