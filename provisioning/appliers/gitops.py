"""The GitOps applier: rendered objects become YAML files in a git repository that Argo CD or Flux syncs.

Layout, one object per file:

    clusters/<cluster>/<namespace>/request-<id>/<kind>-<name>.yaml   objects of one request (its request-id label)
    clusters/<cluster>/<namespace>/_team/<kind>-<name>.yaml          the team's Namespace, quota, policies, LocalQueue
    clusters/<cluster>/_cluster/<request dir>/<kind>-<name>.yaml     cluster-scoped objects (no metadata.namespace)

Each call makes at most one commit and none when the files already say the same. A file lock serialises writers
(threads and processes) on the same repository; git runs with explicit identity and no global or system config.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import subprocess
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from provisioning.appliers.base import (
    AppliedRef,
    KubeObject,
    PermanentApplyError,
    TransientApplyError,
    require_selector,
)
from provisioning.contract import DEFAULT_LABEL_DOMAIN, REQUEST_ID, domain_key

DEFAULT_AUTHOR = "GPU Portal <gpu-portal@localhost>"


def request_label(label_domain: str) -> str:
    """The label carrying the request id, under the portal's label domain (settings.PORTAL_LABEL_DOMAIN)."""
    return domain_key(label_domain, REQUEST_ID)


DEFAULT_REQUEST_LABEL = request_label(DEFAULT_LABEL_DOMAIN)
# Shared by every request of a team, so they live with the team and no request's teardown removes them.
TEAM_KINDS = frozenset({"Namespace", "ResourceQuota", "NetworkPolicy", "LocalQueue"})
TEAM_DIR = "_team"
CLUSTER_SCOPE_DIR = "_cluster"

# Names become path segments: DNS-1123 (and label values) only, so nothing can climb out of the repository.
_SAFE_SEGMENT = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_AUTHOR = re.compile(r"^\s*(?P<name>[^<>]+?)\s*<(?P<email>[^<>\s]+)>\s*$")


class GitOpsApplier:
    """Writes one cluster's objects into `repo_path` (initialised on first use)."""

    def __init__(
        self,
        repo_path: str | os.PathLike[str],
        cluster_name: str,
        author: str = DEFAULT_AUTHOR,
        *,
        request_label: str = DEFAULT_REQUEST_LABEL,
        lock_timeout: float = 30.0,
    ) -> None:
        match = _AUTHOR.match(author)
        if not match:
            raise ValueError(f"author must look like 'Name <email>', got {author!r}")
        self.repo_path = Path(repo_path)
        self.cluster_name = _segment(cluster_name, "cluster name")
        self.author_name, self.author_email = match["name"], match["email"]
        self.request_label = request_label
        self.lock_timeout = lock_timeout

    # -- the Applier interface -------------------------------------------------------------------------------

    def apply(self, objects: Sequence[KubeObject]) -> list[AppliedRef]:
        """Write each object's file and commit them together ("request 42: apply 5 objects")."""
        files = self._files_for([_plain(obj) for obj in objects])
        with self._locked():
            self._ensure_repo()
            written = [_write_if_changed(self.repo_path / path, obj) for path, obj in files.items()]
            sha = self._commit(any(written), f"{self._subject_for(files.values())}: apply {len(files)} objects")
        return [_ref(obj, sha) for obj in files.values()]

    def delete(
        self, selector: Mapping[str, str], namespaces: Sequence[str], kinds: Sequence[tuple[str, str]]
    ) -> list[AppliedRef]:
        """Remove the files of the selected objects and commit ("request 42: delete 5 objects")."""
        require_selector(selector)
        with self._locked():
            self._ensure_repo()
            doomed = {
                path: obj
                for path, obj in self._cluster_files()
                if _selected(obj, selector, set(namespaces), set(kinds))
            }
            for path in doomed:
                self._remove(path)
            sha = self._commit(bool(doomed), f"{self._subject_for(doomed.values())}: delete {len(doomed)} objects")
        return [_ref(obj, sha) for obj in doomed.values()]

    def close(self) -> None:
        pass  # nothing held between calls: each call takes and releases the repository lock

    # -- layout ----------------------------------------------------------------------------------------------

    def path_for(self, obj: Mapping[str, Any]) -> str:
        """The repository-relative path of an object's file."""
        meta = obj.get("metadata", {})
        kind, name = _segment(obj.get("kind", ""), "kind"), _segment(meta.get("name", ""), "metadata.name")
        if kind == "Namespace":
            scope = name
        elif meta.get("namespace"):
            scope = _segment(meta["namespace"], "metadata.namespace")
        else:
            scope = CLUSTER_SCOPE_DIR
        return f"clusters/{self.cluster_name}/{scope}/{self._group_dir(obj)}/{kind.lower()}-{name}.yaml"

    def _group_dir(self, obj: Mapping[str, Any]) -> str:
        request_id = _labels(obj).get(self.request_label)
        if obj.get("kind") in TEAM_KINDS or not request_id:
            return TEAM_DIR
        return f"request-{_segment(str(request_id), self.request_label)}"

    def _files_for(self, objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        files: dict[str, dict[str, Any]] = {}
        for obj in objects:
            path = self.path_for(obj)
            if path in files and files[path] != obj:
                raise PermanentApplyError(f"two different objects would be written to {path}")
            files[path] = obj
        return files

    def _cluster_files(self) -> Iterator[tuple[str, dict[str, Any]]]:
        root = self.repo_path / "clusters" / self.cluster_name
        for file in sorted(root.rglob("*.yaml")):
            path = file.relative_to(self.repo_path).as_posix()
            try:
                obj = yaml.safe_load(file.read_text(encoding="utf-8"))
            except yaml.YAMLError as exc:
                raise PermanentApplyError(f"{path} is not valid YAML: {exc}") from exc
            if isinstance(obj, dict):
                yield path, obj

    def _subject_for(self, objects: Iterable[Mapping[str, Any]]) -> str:
        request_ids = {_labels(obj).get(self.request_label) for obj in objects}
        request_ids.discard(None)
        if len(request_ids) == 1:
            return f"request {request_ids.pop()}"
        return f"cluster {self.cluster_name}"

    # -- git -------------------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold an exclusive flock on "<repo>.lock" beside the repository (it must exist before `git init`)."""
        lock_path = self.repo_path.with_name(self.repo_path.name + ".lock")
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        with open(lock_path, "a") as handle:
            deadline = time.monotonic() + self.lock_timeout
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise TransientApplyError(f"{self.repo_path} is locked by another writer") from None
                    time.sleep(0.05)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _ensure_repo(self) -> None:
        if not (self.repo_path / ".git").exists():
            self.repo_path.mkdir(parents=True, exist_ok=True)
            self._git("init", "--quiet", "--initial-branch=main")

    def _commit(self, changed: bool, subject: str) -> str:
        """Commit this cluster's directory if files changed and git sees a difference. Returns HEAD."""
        scope = f"clusters/{self.cluster_name}"
        if changed:
            self._git("add", "--all", "--", scope)
            staged = self._git("diff", "--cached", "--name-only", "--", scope).split()
            if staged:
                self._git("commit", "--quiet", "-m", subject, "-m", "\n".join(staged), "--", scope)
        return self._head()

    def _remove(self, path: str) -> None:
        """Delete a file and the directories it leaves empty, up to the cluster's directory."""
        file = self.repo_path / path
        file.unlink()
        cluster_root = self.repo_path / "clusters" / self.cluster_name
        for directory in file.parents:
            if directory == cluster_root or any(directory.iterdir()):
                break
            directory.rmdir()

    def _head(self) -> str:
        try:
            return self._git("rev-parse", "--verify", "--quiet", "HEAD").strip()
        except PermanentApplyError:
            return ""  # no commit yet

    def _git(self, *args: str) -> str:
        command = [
            "git",
            "-c", f"user.name={self.author_name}",
            "-c", f"user.email={self.author_email}",
            "-c", "commit.gpgsign=false",
            "-C", str(self.repo_path),
            *args,
        ]  # fmt: skip
        # No global or system config: a developer's or a host's settings must not change what gets committed.
        env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"}
        result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise PermanentApplyError(f"git {args[0]} failed in {self.repo_path}: {result.stderr.strip()}")
        return result.stdout


def _plain(obj: KubeObject) -> dict[str, Any]:
    """A JSON-plain deep copy (Mappings to dicts, tuples to lists): exactly what YAML will round-trip."""
    try:
        return json.loads(json.dumps(obj))
    except (TypeError, ValueError) as exc:
        raise PermanentApplyError(f"object is not JSON-serialisable: {exc}") from exc


def _write_if_changed(file: Path, obj: dict[str, Any]) -> bool:
    text = yaml.safe_dump(obj, sort_keys=False, default_flow_style=False, allow_unicode=True)
    if file.exists() and file.read_text(encoding="utf-8") == text:
        return False
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text, encoding="utf-8")
    return True


def _selected(
    obj: Mapping[str, Any], selector: Mapping[str, str], namespaces: set[str], kinds: set[tuple[str, str]]
) -> bool:
    namespace = obj.get("metadata", {}).get("namespace")
    labels = _labels(obj)
    return (
        (obj.get("apiVersion"), obj.get("kind")) in kinds
        and (namespace is None or namespace in namespaces)
        and all(labels.get(key) == value for key, value in selector.items())
    )


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _ref(obj: Mapping[str, Any], sha: str) -> AppliedRef:
    meta = obj.get("metadata", {})
    return AppliedRef(
        api_version=obj.get("apiVersion", ""),
        kind=obj.get("kind", ""),
        namespace=meta.get("namespace") or "",
        name=meta.get("name", ""),
        uid="",
        resource_version=sha,
    )


def _segment(value: str, what: str) -> str:
    if not _SAFE_SEGMENT.match(value or ""):
        raise PermanentApplyError(f"{what} {value!r} cannot be used in a repository path")
    return value
