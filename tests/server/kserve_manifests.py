"""Checks Kubernetes manifests against KServe's API schema, taken from a pinned KServe release:
the `kserve` Python package (tests/server/requirements-kserve.txt) carries the OpenAPI models of
KServe's CRDs (`kserve.models`, generated from the CRDs' OpenAPI schema) and uses the
`kubernetes` package's models for the core types inside them (containers, probes, ...).

Strict, like `kubectl apply --validate=strict`: every field must exist in the schema (an unknown
or misspelt field is an error, not ignored), values must have the schema's type, and required
fields are checked by the models' own validation (enumerations only where a model declares them;
the CRDs' text-only ones, such as a port's protocol, are not).
"""

import importlib.metadata
import importlib.util
import sys
import types

KSERVE_VERSION = "0.21.0"  # tests/server/requirements-kserve.txt


def _kserve_models():
    # `import kserve` would start importing the model server (FastAPI, gRPC, ...); the generated
    # API models need none of it, so the package is registered without running its __init__.
    if "kserve.models" not in sys.modules:
        spec = importlib.util.find_spec("kserve")
        if spec is None:
            raise SystemExit("FAIL: the kserve package is not installed (tests/server/requirements-kserve.txt)")
        package = types.ModuleType("kserve")
        package.__path__ = list(spec.submodule_search_locations)
        sys.modules["kserve"] = package
    installed = importlib.metadata.version("kserve")
    if installed != KSERVE_VERSION:
        raise SystemExit(f"FAIL: kserve {installed} installed, the schema is pinned to {KSERVE_VERSION}")
    import kserve.models

    return kserve.models


# (apiVersion, kind) -> the model class's name in kserve.models
KINDS = {
    ("serving.kserve.io/v1alpha1", "ServingRuntime"): "V1alpha1ServingRuntime",
    ("serving.kserve.io/v1alpha1", "ClusterServingRuntime"): "V1alpha1ClusterServingRuntime",
    ("serving.kserve.io/v1beta1", "InferenceService"): "V1beta1InferenceService",
}

_PRIMITIVES = {"str": (str,), "int": (int,), "bool": (bool,), "float": (int, float)}
# Types the generated models name but do not define: Kubernetes quantities, int or string.
_QUANTITIES = {"V1beta1MetricQuantity"}


def _model_class(name):
    kserve_models = _kserve_models()
    if hasattr(kserve_models, name):
        return getattr(kserve_models, name)
    import kubernetes.client.models as k8s

    if hasattr(k8s, name):
        return getattr(k8s, name)
    raise KeyError(f"type {name} is in neither kserve.models nor kubernetes.client.models")


def _check(value, type_name, where, errors):
    # kserve's models write list[T] and dict(K, V); kubernetes' newer ones List[T] and Dict[K, V].
    if type_name.startswith("List["):
        type_name = "list[" + type_name[5:]
    elif type_name.startswith("Dict["):
        type_name = "dict(" + type_name[5:-1] + ")"
    if type_name.startswith("list["):
        if not isinstance(value, list):
            errors.append(f"{where}: expected a list, got {type(value).__name__}")
            return
        for k, item in enumerate(value):
            _check(item, type_name[5:-1], f"{where}[{k}]", errors)
    elif type_name.startswith("dict("):
        if not isinstance(value, dict):
            errors.append(f"{where}: expected a map, got {type(value).__name__}")
            return
        value_type = type_name[5:-1].split(",", 1)[1].strip()
        for key, item in value.items():
            if not isinstance(key, str):
                errors.append(f"{where}: map key {key!r} is not a string")
            _check(item, value_type, f"{where}.{key}", errors)
    elif type_name in _PRIMITIVES:
        # YAML booleans are not integers here, whatever Python thinks.
        if isinstance(value, bool) and type_name != "bool" or not isinstance(value, _PRIMITIVES[type_name]):
            errors.append(f"{where}: expected {type_name}, got {type(value).__name__} {value!r}")
    elif type_name in _QUANTITIES:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            errors.append(f"{where}: expected a quantity (int or string), got {type(value).__name__}")
    elif type_name in ("object", "datetime", "date"):
        pass  # int-or-string and free-form fields; timestamps are set by the cluster
    else:
        cls = _model_class(type_name)
        if not isinstance(value, dict):
            errors.append(f"{where}: expected a {type_name} object, got {type(value).__name__}")
            return
        by_json_key = {json_key: attr for attr, json_key in cls.attribute_map.items()}
        kwargs = {}
        for key, item in value.items():
            attr = by_json_key.get(key)
            if attr is None:
                errors.append(f"{where}: unknown field '{key}' in {type_name}")
                continue
            _check(item, cls.openapi_types[attr], f"{where}.{key}", errors)
            kwargs[attr] = item
        try:
            cls(**kwargs)  # the model's own checks: required fields, declared enumerations
        except ValueError as e:
            errors.append(f"{where}: {type_name}: {e}")


def validate(document):
    """Returns the list of schema errors of one manifest (empty when it is valid)."""
    if not isinstance(document, dict):
        return ["the manifest is not a map"]
    key = (document.get("apiVersion"), document.get("kind"))
    if key not in KINDS:
        return [f"apiVersion/kind {key[0]}/{key[1]} is not one of {sorted(KINDS)}"]
    errors = []
    _check(document, KINDS[key], document["kind"], errors)
    return errors
