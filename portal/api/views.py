from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from .serializers import MeSerializer


class MeView(APIView):
    """Who the caller is: username, role and teams. Scripts check their token with it."""

    @extend_schema(responses={200: MeSerializer}, summary="The authenticated user, role and teams")
    def get(self, request):
        return Response(MeSerializer(request.user).data)
