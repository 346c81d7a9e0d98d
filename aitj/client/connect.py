"""Where the client connects, as kubectl's global flags say it: ``Connection``.

Thin: credentials are loaded by the ``kubernetes`` package, from a kubeconfig (``--kubeconfig``,
else $KUBECONFIG or ~/.kube/config, its ``--context``) or else the pod's service account;
``--as`` impersonates as kubectl does (the ``Impersonate-User`` header). A missing kubeconfig
or context is a ``NotConfigured``, never a traceback.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aitj import CLIENT_AGENT
from aitj.client.errors import NotConfigured
from aitj.core.wire import mapping


@dataclass(frozen=True)
class Connection:
    """Connection: a kubeconfig (None: $KUBECONFIG, ~/.kube/config, else in-cluster), one of its
    contexts (None: the current one), a user to act as (None: oneself), and how long one
    request may take in seconds (None: no limit, kubectl's ``--request-timeout=0``)."""

    kubeconfig: Path | None = None
    context: str | None = None
    as_user: str | None = None
    request_timeout: float | None = None

    def _has_kubeconfig(self) -> bool:
        return (
            self.kubeconfig is not None
            or bool(os.environ.get("KUBECONFIG"))
            or Path.home().joinpath(".kube/config").exists()
        )

    def api_client(self) -> Any:
        """api_client: a ``kubernetes.client.ApiClient`` with these credentials."""
        from kubernetes import client, config
        from kubernetes.config import ConfigException
        from urllib3.util import Retry

        if self.kubeconfig is not None and not self.kubeconfig.is_file():
            raise NotConfigured(f"the kubeconfig {self.kubeconfig} does not exist")
        cfg = client.Configuration()
        try:
            if self._has_kubeconfig() or self.context is not None:
                config.load_kube_config(  # type: ignore[no-untyped-call]
                    config_file=str(self.kubeconfig) if self.kubeconfig else None,
                    context=self.context,
                    client_configuration=cfg,
                )
            else:
                config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        except (ConfigException, OSError, TypeError, ValueError) as e:
            raise NotConfigured(f"no cluster configured: {e} (give --kubeconfig, or set KUBECONFIG)") from e
        cfg.connection_pool_maxsize = 16
        # A server that refuses connections is said at once, not after three attempts; a pooled
        # connection the server closed meanwhile is still retried (a notebook's client lives long).
        cfg.retries = Retry(total=3, connect=0)
        api = client.ApiClient(cfg)
        api.user_agent = CLIENT_AGENT  # the field manager of what it writes
        if self.as_user:
            api.set_default_header("Impersonate-User", self.as_user)  # type: ignore[no-untyped-call]
        return api

    def namespace(self) -> str:
        """namespace: the context's namespace, as kubectl uses it ("default" when it names none,
        or without a kubeconfig: in-cluster, the pod's own namespace when it can be read)."""
        from kubernetes import config

        if not self._has_kubeconfig():
            return _pod_namespace()
        try:
            contexts, active = config.list_kube_config_contexts(  # type: ignore[no-untyped-call]
                config_file=str(self.kubeconfig) if self.kubeconfig else None
            )
        except Exception:  # an unreadable kubeconfig: api_client() says why
            return "default"
        if self.context is not None:
            active = next((c for c in contexts if c.get("name") == self.context), None)
        value = mapping(mapping(active).get("context")).get("namespace")
        return value if isinstance(value, str) and value else "default"


_POD_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def _pod_namespace() -> str:
    try:
        return _POD_NAMESPACE.read_text().strip() or "default"
    except OSError:
        return "default"
