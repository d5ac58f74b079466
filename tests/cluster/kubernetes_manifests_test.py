#!/usr/bin/env python3
"""The Kubernetes manifests of deploy/kubernetes, checked for form without a cluster.

Every YAML document parses and has apiVersion, kind and metadata.name; every container runs
`tuner VERB` with only the flags that `tuner help` lists for VERB, its required ones and a value
for each flag that takes one, and $(VAR)s that its env defines; the Secrets that pods mount are
made by the kustomization's secretGenerator (or are Secret documents) with the files the
commands name; executors request nvidia.com/gpu; `tuner serve` keeps its database on a mounted
PersistentVolumeClaim that a document defines and listens on the port a Service forwards, the
port and Service name the executors connect to; the key files are on mounted Secrets. Then the
same checks on broken copies, each of which must be caught; and, where kubectl is installed,
`kubectl kustomize` on a copy with keys from `tuner keygen` must build.

    kubernetes_manifests_test.py TUNER_BINARY MANIFEST_DIR
Prints PASS, or SKIP: where PyYAML is missing (Debian: apt-get install python3-yaml).
"""
import copy
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:
    print("SKIP: no PyYAML for python3 (Debian: apt-get install python3-yaml)")
    sys.exit(0)

POD_TEMPLATE_KINDS = {"Deployment", "Job", "StatefulSet", "DaemonSet", "ReplicaSet"}
KEY_FLAGS = {"serve": ["--key", "--executor-keys"], "executor": ["--key", "--coordinator-key"]}


def tuner_flags(tuner):
    """{verb: {flag: (takes_value, required)}} from `tuner help`."""
    text = subprocess.run([tuner, "help"], capture_output=True, text=True, check=True).stdout
    verbs, verb = {}, None
    for line in text.splitlines():
        command = re.match(r"^  ([a-z][a-z-]*)(?: |$)", line)
        if command:
            verb = command.group(1)
            verbs.setdefault(verb, {})
            continue
        flag = re.match(r"^ {6}(--[a-z0-9-]+)(?: (\S[^ ]*(?: \S+)*?))?(?: {2,}(.*)|$)", line)
        if flag and verb:
            verbs[verb][flag.group(1)] = (flag.group(2) is not None,
                                          "(required)" in (flag.group(3) or ""))
    return verbs


def load(directory):
    """[(file, document)] of every YAML file of the folder; a parse error is a problem."""
    documents, problems = [], []
    for name in sorted(os.listdir(directory)):
        if not name.endswith((".yaml", ".yml")):
            continue
        try:
            with open(os.path.join(directory, name)) as f:
                for document in yaml.safe_load_all(f):
                    if document is not None:
                        documents.append((name, document))
        except yaml.YAMLError as e:
            problems.append(f"{name}: does not parse: {e}")
    if not documents:
        problems.append(f"{directory}: no YAML documents")
    return documents, problems


def pod_specs(documents):
    """(where, pod spec) for each workload's pod template (and each Pod)."""
    for name, document in documents:
        kind = document.get("kind")
        where = f"{name}: {kind} {document.get('metadata', {}).get('name')}"
        if kind in POD_TEMPLATE_KINDS:
            yield where, document.get("spec", {}).get("template", {}).get("spec", {})
        elif kind == "Pod":
            yield where, document.get("spec", {})


def secrets_defined(documents):
    """{secret name: set of its keys (None: unknown)} from Secret documents and secretGenerator."""
    secrets = {}
    for name, document in documents:
        if document.get("kind") == "Secret":
            keys = set(document.get("data", {}) or {}) | set(document.get("stringData", {}) or {})
            secrets[document["metadata"]["name"]] = keys
        if document.get("kind") == "Kustomization":
            for generator in document.get("secretGenerator", []) or []:
                keys = set()
                for entry in generator.get("files", []) or []:
                    key, _, path = entry.partition("=")
                    keys.add(key if path else os.path.basename(entry))
                for entry in generator.get("literals", []) or []:
                    keys.add(entry.split("=", 1)[0])
                if generator.get("envs") or generator.get("env"):
                    keys = None
                secrets[generator["name"]] = keys
    return secrets


def mount_of(path, container, volumes):
    """The volume (dict) mounted over `path` in the container, and the path inside it."""
    best = None
    for mount in container.get("volumeMounts", []) or []:
        root = mount.get("mountPath", "").rstrip("/")
        if path == root or path.startswith(root + "/"):
            if best is None or len(root) > len(best[0]):
                best = (root, mount)
    if best is None:
        return None, None
    volume = volumes.get(best[1].get("name"))
    inside = path[len(best[0]):].lstrip("/")
    sub = best[1].get("subPath")
    return volume, os.path.join(sub, inside) if sub else inside


def check(documents, directory, flags):
    problems = []
    by_kind = {}
    for name, document in documents:
        for field in ("apiVersion", "kind"):
            if not document.get(field):
                problems.append(f"{name}: a document without {field}")
        if not (document.get("metadata") or {}).get("name"):
            problems.append(f"{name}: a {document.get('kind')} without metadata.name")
        by_kind.setdefault(document.get("kind"), {})[(document.get("metadata") or {}).get("name")] = document

    # A kustomization's resources and generator files are there.
    for name, document in documents:
        if document.get("kind") != "Kustomization":
            continue
        for resource in document.get("resources", []) or []:
            if not os.path.exists(os.path.join(directory, resource)):
                problems.append(f"{name}: resource {resource} is not in {directory}")

    secrets = secrets_defined(documents)
    claims = by_kind.get("PersistentVolumeClaim", {})
    services = by_kind.get("Service", {})
    serve_endpoints, connects = [], []
    for where, spec in pod_specs(documents):
        volumes = {v.get("name"): v for v in spec.get("volumes", []) or []}
        for volume in volumes.values():
            secret = volume.get("secret")
            if secret is None:
                continue
            secret_name = secret.get("secretName")
            if secret_name not in secrets:
                problems.append(f"{where}: volume {volume['name']} mounts Secret {secret_name}, "
                                f"which no document or secretGenerator makes")
                continue
            for item in secret.get("items", []) or []:
                if secrets[secret_name] is not None and item.get("key") not in secrets[secret_name]:
                    problems.append(f"{where}: Secret {secret_name} has no key {item.get('key')}")
        for volume in volumes.values():
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if claim is not None and claim not in claims:
                problems.append(f"{where}: volume {volume['name']} claims {claim}, which no "
                                f"PersistentVolumeClaim document defines")
        for container in spec.get("containers", []) or []:
            here = f"{where}, container {container.get('name')}"
            words = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
            if not words or os.path.basename(words[0]) != "tuner":
                problems.append(f"{here}: does not run tuner: {words}")
                continue
            verb = words[1] if len(words) > 1 else None
            if verb not in flags:
                problems.append(f"{here}: tuner has no command '{verb}'")
                continue
            env = {e.get("name") for e in container.get("env", []) or []}
            given = {}
            i = 2
            while i < len(words):
                word = words[i]
                for var in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", word):
                    if var not in env:
                        problems.append(f"{here}: $({var}) is not in the container's env")
                if not word.startswith("--"):
                    problems.append(f"{here}: tuner {verb}: '{word}' is not a flag")
                    i += 1
                    continue
                flag, _, inline = word.partition("=")
                if flag not in flags[verb]:
                    problems.append(f"{here}: tuner {verb} has no flag {flag} (tuner help)")
                    i += 1
                    continue
                takes_value = flags[verb][flag][0]
                value = None
                if takes_value:
                    if inline:
                        value = inline
                    elif i + 1 < len(words) and not words[i + 1].startswith("--"):
                        value = words[i + 1]
                        i += 1
                    else:
                        problems.append(f"{here}: tuner {verb} {flag} needs a value")
                given[flag] = value
                i += 1
            for flag, (_, required) in flags[verb].items():
                if required and flag not in given:
                    problems.append(f"{here}: tuner {verb} needs {flag}")
            # Key files on mounted Secrets that hold them.
            for flag in KEY_FLAGS.get(verb, []):
                path = given.get(flag)
                if path is None:
                    problems.append(f"{here}: tuner {verb} without {flag} (CURVE keys)")
                    continue
                volume, inside = mount_of(path, container, volumes)
                if volume is None or "secret" not in volume:
                    problems.append(f"{here}: {flag} {path} is not on a mounted Secret")
                    continue
                keys = secrets.get(volume["secret"].get("secretName"))
                if inside and keys is not None and inside not in keys:
                    problems.append(f"{here}: {flag} {path}: Secret "
                                    f"{volume['secret'].get('secretName')} has no key {inside}")
            if verb == "serve":
                storage = given.get("--storage") or ""
                volume, _ = mount_of(storage, container, volumes)
                if volume is None or "persistentVolumeClaim" not in volume:
                    problems.append(f"{here}: the database {storage} is not on a mounted "
                                    f"PersistentVolumeClaim")
                endpoint = given.get("--endpoint") or ""
                port = re.match(r"^tcp://[^:]+:(\d+)$", endpoint)
                if not port:
                    problems.append(f"{here}: --endpoint {endpoint} is not tcp://HOST:PORT")
                else:
                    ports = {p.get("name"): p.get("containerPort")
                             for p in container.get("ports", []) or []}
                    serve_endpoints.append((here, int(port.group(1)), ports,
                                            spec_labels(documents, where)))
            if verb == "executor":
                gpus = [(container.get("resources") or {}).get(part, {}) or {}
                        for part in ("requests", "limits")]
                if not any(int(str(g.get("nvidia.com/gpu", 0))) >= 1 for g in gpus):
                    problems.append(f"{here}: the executor requests no nvidia.com/gpu")
                connects.append((here, given.get("--connect") or ""))

    # A Service forwards the serve's port; the executors connect to that Service and port.
    if not serve_endpoints:
        problems.append("no container runs tuner serve")
    for here, port, ports, labels in serve_endpoints:
        forwarding = []
        for service_name, service in services.items():
            selector = (service.get("spec") or {}).get("selector") or {}
            if not selector or any(labels.get(k) != v for k, v in selector.items()):
                continue
            for p in (service.get("spec") or {}).get("ports", []) or []:
                target = p.get("targetPort", p.get("port"))
                target = ports.get(target, target) if isinstance(target, str) else target
                if target == port:
                    forwarding.append((service_name, p.get("port")))
        if not forwarding:
            problems.append(f"{here}: no Service selects it and forwards port {port}")
        for where, connect in connects:
            if not any(re.match(rf"^tcp://{re.escape(name)}(\.[a-z0-9.-]+)?:{service_port}$",
                                connect) for name, service_port in forwarding):
                problems.append(f"{where}: --connect {connect} is not the serve's Service "
                                f"({', '.join(f'tcp://{n}:{p}' for n, p in forwarding)})")
    if not connects:
        problems.append("no container runs tuner executor")
    return problems


def spec_labels(documents, where):
    """The pod template's labels of the workload named in `where`."""
    for name, document in documents:
        if where == f"{name}: {document.get('kind')} {document.get('metadata', {}).get('name')}":
            return ((document.get("spec") or {}).get("template") or {}).get("metadata", {}).get(
                "labels", {}) or {}
    return {}


def containers(documents, verb):
    for _, spec in pod_specs(documents):
        for container in spec.get("containers", []) or []:
            if (container.get("command") or [None, None])[1:2] == [verb]:
                yield spec, container


def broken_copies(documents):
    """(what is broken, documents) that check() must find fault with."""
    def mutated(what, change):
        copied = copy.deepcopy(documents)
        change(copied)
        return what, copied

    def unknown_flag(d):
        for _, c in containers(d, "executor"):
            c["args"] += ["--lease-timeout-ms", "500"]

    def no_gpu(d):
        for _, c in containers(d, "executor"):
            for part in ("requests", "limits"):
                (c.get("resources") or {}).get(part, {}).pop("nvidia.com/gpu", None)

    def missing_secret(d):
        for spec, _ in containers(d, "executor"):
            for v in spec.get("volumes", []):
                if "secret" in v:
                    v["secret"]["secretName"] += "-typo"

    def database_off_volume(d):
        for _, c in containers(d, "serve"):
            i = c["args"].index("--storage")
            c["args"][i + 1] = "/tmp/studies.db"

    def wrong_port(d):
        for _, c in containers(d, "executor"):
            i = c["args"].index("--connect")
            c["args"][i + 1] = "tcp://tuner-serve:6000"

    def no_name(d):
        d[0][1]["metadata"].pop("name")

    return [mutated("an unknown flag", unknown_flag), mutated("no GPU request", no_gpu),
            mutated("a Secret that is not made", missing_secret),
            mutated("the database off the volume", database_off_volume),
            mutated("executors connecting to another port", wrong_port),
            mutated("a document without a name", no_name)]


def kustomize_builds(tuner, directory):
    """Problems of `kubectl kustomize` on a copy with fresh keys; [] where kubectl is missing."""
    kubectl = shutil.which("kubectl")
    if not kubectl:
        print("kubectl not installed: the kustomization is not built")
        return []
    with tempfile.TemporaryDirectory() as tmp:
        copied = os.path.join(tmp, "kubernetes")
        shutil.copytree(directory, copied)
        for name in ("coordinator", "executor"):
            subprocess.run([tuner, "keygen", "--out", os.path.join(copied, "keys", name)],
                           check=True, capture_output=True)
        built = subprocess.run([kubectl, "kustomize", copied], capture_output=True, text=True,
                               timeout=60)
        if built.returncode != 0:
            return [f"kubectl kustomize: {built.stderr.strip()}"]
        documents = [("kustomize output", d) for d in yaml.safe_load_all(built.stdout) if d]
        kinds = sorted(d.get("kind") for _, d in documents)
        print(f"kubectl kustomize builds: {', '.join(kinds)}")
        return [f"kustomize output: {p}" for p in check(documents, copied, tuner_flags(tuner))]


def main():
    tuner, directory = sys.argv[1], sys.argv[2]
    flags = tuner_flags(tuner)
    for verb in ("serve", "executor", "keygen"):
        if not flags.get(verb):
            print(f"FAIL: tuner help lists no flags of '{verb}'")
            return 1
    documents, problems = load(directory)
    problems += check(documents, directory, flags)
    for what, broken in broken_copies(documents):
        if not check(broken, directory, flags):
            problems.append(f"the check does not catch {what}")
    problems += kustomize_builds(tuner, directory)
    if problems:
        print("FAIL:\n  " + "\n  ".join(problems))
        return 1
    print(f"{len(documents)} documents checked: "
          + ", ".join(f"{d.get('kind')} {d['metadata']['name']}" for _, d in documents))
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
