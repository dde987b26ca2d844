"""``grid run``: one Ray Serve application per model, no HTTP proxy, called through a
``DeploymentHandle`` by the coordinator."""

from __future__ import annotations

import threading
import time
from typing import Any

import ray

from rigwise.grid.placement import NODE_ID_LABEL, PlacementPlan

SERVE_CPUS = 0.1  # per replica: more than 0 keeps it off the head (which has num_cpus=0)
SERVE_DEPLOYMENT = "TinyLMReplica"
SERVE_TIMEOUT_S = 120.0


def serve_app_name(model_id: str) -> str:
    """The Ray Serve application serving ``model_id`` (one per model)."""
    return f"rigwise-{model_id}"


class TinyLMReplica:
    """A Ray Serve replica holding one registered tiny model (loaded once, CPU)."""

    def __init__(self, model_id: str, weights: bytes) -> None:
        from rigwise.grid import tinylm

        self.model_id = model_id
        self.model, self.config = tinylm.load(weights)
        labels = ray.get_runtime_context().get_node_labels()
        self.node = str(labels.get(NODE_ID_LABEL, "unknown"))

    def generate(self, prompt: str, tokens: int) -> dict[str, Any]:
        from rigwise.grid import tinylm

        text = tinylm.sample(self.model, self.config, prompt, tokens)
        return {"text": text, "tokens": tokens, "node": self.node, "model": self.model_id}


def serve_status() -> dict[str, Any]:
    """Ray Serve on the connected cluster: ``{"applications": {name: status}, "proxies": N}``
    (no controller yet: no applications)."""
    from ray import serve

    status = serve.status()
    applications = {name: str(app.status.value) for name, app in status.applications.items()}
    return {"applications": applications, "proxies": len(status.proxies)}


class ServeFront:
    """The coordinator's side of Ray Serve: deploys a model's application once, then answers
    run requests through its handle."""

    def __init__(self) -> None:
        self.serve_lock = threading.Lock()
        self.serve_started = False

    def answer(
        self, app: dict[str, Any], env: dict[str, str], plan: PlacementPlan, weights: bytes
    ) -> dict[str, Any]:
        """Answer one run request through the model's Serve application (deployed first when
        it is not running)."""
        from ray import serve

        started = time.perf_counter()
        model_id = str(app["model"])
        name, reused = self._deployment(model_id, env, plan, weights)
        handle = serve.get_app_handle(name)
        prompt, tokens = str(app.get("prompt", "")), int(app.get("tokens", 64))
        answer = dict(handle.generate.remote(prompt, tokens).result(timeout_s=SERVE_TIMEOUT_S))
        how = "reused" if reused else "deployed"
        answer.update(
            serve_app=name,
            deployment=SERVE_DEPLOYMENT,
            reused=reused,
            seconds=time.perf_counter() - started,
            log=[f"Ray Serve application {name} ({how}) answered on node {answer['node']}"],
        )
        return answer

    def _deployment(
        self, model_id: str, env: dict[str, str], plan: PlacementPlan, weights: bytes
    ) -> tuple[str, bool]:
        """(application name, whether it was already running); deploys it when it is not."""
        from ray import serve

        name = serve_app_name(model_id)
        with self.serve_lock:
            if not self.serve_started:
                # no HTTP proxy: the coordinator's authenticated API is the only way in
                serve.start(proxy_location="Disabled")
                self.serve_started = True
            current = serve.status().applications.get(name)
            if current is not None and str(current.status.value) in ("RUNNING", "DEPLOYING"):
                return name, True
            options: dict[str, Any] = {"num_cpus": SERVE_CPUS}
            if plan.bundle_label_selector:
                options["label_selector"] = dict(plan.bundle_label_selector[0])
            if env:
                options["runtime_env"] = {"env_vars": dict(env)}
            deployment = serve.deployment(
                name=SERVE_DEPLOYMENT, num_replicas=1, ray_actor_options=options
            )(TinyLMReplica)
            serve.run(deployment.bind(model_id, weights), name=name, route_prefix=None)
            return name, False
