"""GitOpsApplier: files in a git repository, one commit per call, none when nothing changed."""
from __future__ import annotations

import fcntl
import subprocess
import threading

import pytest
import yaml

from provisioning.appliers.base import Applier, PermanentApplyError, TransientApplyError
from provisioning.appliers.gitops import GitOpsApplier

CLUSTER = "gpu-east"
NS = "team-vision"
KINDS = [("batch/v1", "Job"), ("v1", "Service"), ("scheduling.volcano.sh/v1beta1", "PodGroup")]


def request_objects(request_id: int) -> list[dict]:
    name = f"train-{request_id}"
    labels = {"gpu-portal.io/request-id": str(request_id), "gpu-portal.io/team": "vision"}
    return [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": NS, "labels": {"gpu-portal.io/team": "vision"}},
        },
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "gpu-quota", "namespace": NS},
            "spec": {"hard": {"requests.nvidia.com/gpu": "16"}},
        },
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": NS, "labels": labels},
            "spec": {"minMember": 2, "queue": "vision"},
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": NS, "labels": labels},
            "spec": {"clusterIP": "None", "selector": {"job-name": name}},
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": NS, "labels": labels, "annotations": {"note": "yes"}},
            "spec": {
                "completionMode": "Indexed",
                "completions": 2,
                "parallelism": 2,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "t", "image": "img:1", "args": ["--flag", "on", "1"]}],
                    }
                },
            },
        },
    ]


@pytest.fixture
def repo(tmp_path):
    return tmp_path / "gitops" / "gpu-east"


@pytest.fixture
def applier(repo):
    return GitOpsApplier(repo, CLUSTER, "GPU Portal <portal@example.com>")


def git(repo, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def commits(repo) -> list[str]:
    return git(repo, "log", "--format=%s").splitlines()


def tracked(repo) -> list[str]:
    return sorted(git(repo, "ls-files").splitlines())


def test_gitops_applier_is_an_applier(applier):
    assert isinstance(applier, Applier)


def test_apply_initialises_the_repository_and_commits_each_object_as_a_file(repo, applier):
    refs = applier.apply(request_objects(42))

    assert tracked(repo) == [
        f"clusters/{CLUSTER}/{NS}/_team/namespace-{NS}.yaml",
        f"clusters/{CLUSTER}/{NS}/_team/resourcequota-gpu-quota.yaml",
        f"clusters/{CLUSTER}/{NS}/request-42/job-train-42.yaml",
        f"clusters/{CLUSTER}/{NS}/request-42/podgroup-train-42.yaml",
        f"clusters/{CLUSTER}/{NS}/request-42/service-train-42.yaml",
    ]
    assert commits(repo) == ["request 42: apply 5 objects"]
    head = git(repo, "rev-parse", "HEAD").strip()
    assert [(r.kind, r.namespace, r.name, r.uid, r.resource_version) for r in refs] == [
        ("Namespace", "", NS, "", head),
        ("ResourceQuota", NS, "gpu-quota", "", head),
        ("PodGroup", NS, "train-42", "", head),
        ("Service", NS, "train-42", "", head),
        ("Job", NS, "train-42", "", head),
    ]
    assert git(repo, "log", "-1", "--format=%an <%ae>").strip() == "GPU Portal <portal@example.com>"


def test_files_round_trip_to_the_same_dicts(repo, applier):
    objects = request_objects(42)

    applier.apply(objects)

    for obj in objects:
        text = (repo / applier.path_for(obj)).read_text()
        assert yaml.safe_load(text) == obj
        assert "---" not in text  # one document per file
    job_text = (repo / applier.path_for(objects[-1])).read_text()
    assert job_text.index("apiVersion") < job_text.index("kind") < job_text.index("metadata")  # keys not sorted


def test_second_identical_apply_makes_no_commit(repo, applier):
    first = applier.apply(request_objects(42))

    second = applier.apply(request_objects(42))

    assert commits(repo) == ["request 42: apply 5 objects"]
    assert second == first


def test_changed_object_makes_one_commit_with_only_its_file(repo, applier):
    applier.apply(request_objects(42))
    objects = request_objects(42)
    objects[-1]["spec"]["parallelism"] = 1

    applier.apply(objects)

    assert commits(repo) == ["request 42: apply 5 objects"] * 2
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == [
        f"clusters/{CLUSTER}/{NS}/request-42/job-train-42.yaml"
    ]


def test_delete_removes_the_requests_files_and_commits(repo, applier):
    applier.apply(request_objects(42))
    applier.apply(request_objects(43))

    deleted = applier.delete({"gpu-portal.io/request-id": "42"}, [NS], KINDS)

    assert sorted((r.kind, r.name) for r in deleted) == [
        ("Job", "train-42"),
        ("PodGroup", "train-42"),
        ("Service", "train-42"),
    ]
    assert {r.resource_version for r in deleted} == {git(repo, "rev-parse", "HEAD").strip()}
    assert commits(repo)[0] == "request 42: delete 3 objects"
    assert not any("request-42" in path for path in tracked(repo))
    assert sum("request-43" in path for path in tracked(repo)) == 3
    assert f"clusters/{CLUSTER}/{NS}/_team/namespace-{NS}.yaml" in tracked(repo)
    assert not (repo / "clusters" / CLUSTER / NS / "request-42").exists()


def test_second_delete_finds_nothing_and_makes_no_commit(repo, applier):
    applier.apply(request_objects(42))
    applier.delete({"gpu-portal.io/request-id": "42"}, [NS], KINDS)

    assert applier.delete({"gpu-portal.io/request-id": "42"}, [NS], KINDS) == []
    assert len(commits(repo)) == 2


def test_delete_only_touches_listed_kinds_and_namespaces(repo, applier):
    applier.apply(request_objects(42))

    assert applier.delete({"gpu-portal.io/request-id": "42"}, ["elsewhere"], KINDS) == []
    assert [r.kind for r in applier.delete({"gpu-portal.io/request-id": "42"}, [NS], [("batch/v1", "Job")])] == ["Job"]


def test_delete_refuses_an_empty_selector(applier):
    with pytest.raises(ValueError):
        applier.delete({}, [NS], KINDS)


def test_clusters_share_a_repository_without_touching_each_other(repo, applier):
    other = GitOpsApplier(repo, "gpu-west", "GPU Portal <portal@example.com>")
    applier.apply(request_objects(42))
    other.apply(request_objects(42))

    other.delete({"gpu-portal.io/request-id": "42"}, [NS], KINDS)

    assert sum(path.startswith(f"clusters/{CLUSTER}/") for path in tracked(repo)) == 5


def test_concurrent_applies_do_not_corrupt_the_repository(repo):
    def work(request_id: int) -> None:
        applier = GitOpsApplier(repo, CLUSTER, "GPU Portal <portal@example.com>")  # as in two workers
        for version in range(4):
            objects = request_objects(request_id)
            objects[-1]["spec"]["parallelism"] = version + 1
            applier.apply(objects)

    threads = [threading.Thread(target=work, args=(request_id,)) for request_id in (42, 43)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    git(repo, "fsck", "--strict")
    subjects = commits(repo)
    assert sorted(subjects) == ["request 42: apply 5 objects"] * 4 + ["request 43: apply 5 objects"] * 4
    assert git(repo, "status", "--porcelain") == ""
    for request_id in (42, 43):
        job_file = repo / f"clusters/{CLUSTER}/{NS}/request-{request_id}/job-train-{request_id}.yaml"
        job = yaml.safe_load(job_file.read_text())
        assert job["spec"]["parallelism"] == 4


def test_a_held_lock_is_a_transient_error(repo):
    applier = GitOpsApplier(repo, CLUSTER, lock_timeout=0.2)
    lock_file = repo.with_name(repo.name + ".lock")
    lock_file.parent.mkdir(parents=True)
    with open(lock_file, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)

        with pytest.raises(TransientApplyError, match="locked"):
            applier.apply(request_objects(42))


def test_global_git_config_does_not_matter(repo, applier, tmp_path, monkeypatch):
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = Somebody Else\n[commit]\n\tgpgsign = true\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("HOME", str(tmp_path))

    applier.apply(request_objects(42))

    assert git(repo, "log", "-1", "--format=%an").strip() == "GPU Portal"


@pytest.mark.parametrize("name", ["../escape", "a/b", "", "UPPER/../x"])
def test_names_that_are_not_path_segments_are_refused(applier, name):
    job = request_objects(42)[-1]
    job["metadata"]["name"] = name

    with pytest.raises(PermanentApplyError, match="cannot be used in a repository path"):
        applier.apply([job])


def test_a_kind_that_is_not_a_path_segment_is_refused(applier):
    job = {**request_objects(42)[-1], "kind": "../../etc/Job"}

    with pytest.raises(PermanentApplyError, match="kind"):
        applier.apply([job])


def test_two_objects_for_one_file_are_refused(applier):
    job = request_objects(42)[-1]
    other = {**job, "spec": {}}

    with pytest.raises(PermanentApplyError, match="two different objects"):
        applier.apply([job, other])


def test_author_must_be_name_and_email(repo):
    with pytest.raises(ValueError, match="Name <email>"):
        GitOpsApplier(repo, CLUSTER, "portal")
