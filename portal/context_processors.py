from .roles import primary_role, user_roles


def roles(request):
    user = getattr(request, "user", None)
    if user is None:
        return {}
    return {"portal_role": primary_role(user), "portal_roles": user_roles(user)}
