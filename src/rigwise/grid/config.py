"""Where a grid keeps its state, and the names of the files in its data directory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rigwise.errors import InputError

ADMIN_TOKEN_FILE = "admin-token"
RAY_TOKEN_FILE = "ray-token"
DB_FILE = "grid.sqlite"
DEFAULT_PORT = 8765
DEFAULT_REPLICAS = 2
# uploads are held in memory while they are chunked and hashed: 256 MiB by default
DEFAULT_MAX_UPLOAD_BYTES = 256 * 2**20


@dataclass(frozen=True)
class GridConfig:
    """Everything a coordinator needs to start; paths are resolved."""

    data_dir: Path
    db_url: str
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    ray_address: str | None = None
    replicas: int = DEFAULT_REPLICAS
    policy_file: Path | None = None
    store_dirs: tuple[Path, ...] = ()  # extra dataset stores (NAS mounts, other disks)
    max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES  # larger request bodies get HTTP 413

    @property
    def admin_token_path(self) -> Path:
        return self.data_dir / ADMIN_TOKEN_FILE

    @property
    def ray_token_path(self) -> Path:
        return self.data_dir / RAY_TOKEN_FILE

    @property
    def storage_dir(self) -> Path:
        return self.data_dir / "storage"

    @property
    def checkpoint_dir(self) -> Path:
        return self.data_dir / "checkpoints"

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


def make_config(
    data_dir: str | Path,
    *,
    db_url: str | None = None,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    ray_address: str | None = None,
    replicas: int = DEFAULT_REPLICAS,
    policy_file: str | Path | None = None,
    store_dirs: tuple[str | Path, ...] = (),
    max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES,
) -> GridConfig:
    """A config with the data directory created owner-only (0700: it holds the tokens, the
    database and checkpoints) and the SQLite default filled in."""
    if max_upload_bytes < 1:
        raise InputError(
            f"The upload limit must be positive, got {max_upload_bytes} bytes.",
            hint="Use --max-upload-mib 256.",
        )
    if replicas < 1:
        raise InputError(f"replicas must be at least 1, got {replicas}.", hint="Use --replicas 2.")
    if not 0 < port < 65536:
        raise InputError(f"Port {port} is out of range.", hint="Use a port like 8765.")
    policy = Path(policy_file).expanduser().resolve() if policy_file else None
    if policy is not None:  # read now: 'grid up' read it after starting the Ray head
        from rigwise.grid.policy import load_policy

        load_policy(policy)
    root = Path(data_dir).expanduser().resolve()
    if not root.exists():  # an existing folder keeps its mode; the files in it are 0600
        root.mkdir(mode=0o700, parents=True)
        root.chmod(0o700)
    url = db_url or f"sqlite:///{root / DB_FILE}"
    if not url.startswith(("sqlite:", "postgresql:", "postgresql+")):
        raise InputError(
            f"Unsupported database URL {url!r}.",
            hint="Use sqlite:///path/grid.sqlite or postgresql://user@host/db.",
        )
    stores = tuple(Path(d).expanduser().resolve() for d in store_dirs)
    for store in stores:
        if not store.is_dir():
            raise InputError(f"Store {str(store)!r} is not a directory.", hint="Mount it first.")
    return GridConfig(
        root, url, host, port, ray_address, replicas, policy, stores, max_upload_bytes
    )


def ray_network_env(host: str) -> dict[str, str]:
    """Extra Ray environment for a grid on the loopback address.

    Ray replaces 127.0.0.1 in addresses by the machine's outward IP unless its single-machine
    mode is on (``ray._private.services.resolve_ip_for_localhost``); a loopback grid must stay
    on loopback, so that mode is turned on. A LAN address needs nothing.
    """
    if host in ("127.0.0.1", "localhost", "::1"):
        return {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    return {}
