"""Preview names: the request id, not known yet, as a placeholder only where that is exactly right."""
from provisioning.manifests.names import PREVIEW_MAX_ID, child_name, preview_name, request_base_name


def rendered(name, suffix, request_id):
    return child_name(request_base_name(name, request_id), suffix)


def test_an_id_independent_name_is_shown_as_it_is():
    assert preview_name("chat", with_small_id="gpu-team-a", with_large_id="gpu-team-a") == "gpu-team-a"


def test_a_short_name_shows_the_placeholder_where_the_id_goes():
    small, large = rendered("chat-serve", "pdb", 1), rendered("chat-serve", "pdb", PREVIEW_MAX_ID)
    assert preview_name("chat-serve", with_small_id=small, with_large_id=large) == "chat-serve-r<id>-pdb"
    assert preview_name("chat-serve", with_small_id=small, with_large_id=large).replace("<id>", "9") \
        == rendered("chat-serve", "pdb", 9)


def test_a_long_name_that_the_id_shortens_is_not_guessed():
    name = "a-rather-long-request-name-for-a-model-server-x"  # 47 characters: shortened with a hash
    small, large = rendered(name, "headless", 1), rendered(name, "headless", PREVIEW_MAX_ID)
    assert preview_name(name, with_small_id=small, with_large_id=large) is None
