"""generate_keypair: keys that cryptography and OpenSSH both accept, and that survive the Secret."""

from __future__ import annotations

import base64
import shutil
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from aitj.controller.sshkeys import KEY_BITS, generate_keypair
from aitj.core.render import render_ssh_secret
from tests.unit.builders import seed_job


@pytest.fixture(scope="module")
def keypair() -> tuple[str, str]:
    return generate_keypair("aitj@default/test-horovod-elastic")


def public_of(private_pem: str) -> str:
    key = serialization.load_pem_private_key(private_pem.encode(), password=None)
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        .decode()
    )


def test_the_private_key_is_an_unencrypted_rsa_3072_pem(keypair: tuple[str, str]) -> None:
    private_pem, _ = keypair
    assert private_pem.startswith("-----BEGIN RSA PRIVATE KEY-----\n")
    key = serialization.load_pem_private_key(private_pem.encode(), password=None)
    assert isinstance(key, rsa.RSAPrivateKey)
    assert key.key_size == KEY_BITS == 3072


def test_the_public_key_matches_the_private_key(keypair: tuple[str, str]) -> None:
    private_pem, public = keypair
    kind, blob, comment = public.split(" ")
    assert kind == "ssh-rsa"
    assert f"{kind} {blob}" == public_of(private_pem)
    assert comment == "aitj@default/test-horovod-elastic"


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs OpenSSH's ssh-keygen")
def test_openssh_reads_the_private_key_and_derives_the_same_public_key(
    keypair: tuple[str, str], tmp_path: Path
) -> None:
    private_pem, public = keypair
    path = tmp_path / "id_rsa"
    path.write_text(private_pem)
    path.chmod(0o600)
    derived = subprocess.run(
        ["ssh-keygen", "-y", "-f", str(path)], capture_output=True, text=True, check=True
    )
    assert derived.stdout.split()[:2] == public.split()[:2]


def test_every_call_makes_a_new_key(keypair: tuple[str, str]) -> None:
    assert generate_keypair()[0] != keypair[0]


@pytest.mark.parametrize(
    ("comment", "suffix"),
    [
        pytest.param("", None, id="an empty comment leaves the line bare"),
        pytest.param("x", "x", id="a comment ends it"),
    ],
)
def test_the_public_key_line_ends_with_its_comment(comment: str, suffix: str | None) -> None:
    fields = generate_keypair(comment)[1].split(" ")
    assert (fields[2] if len(fields) == 3 else None) == suffix


def test_a_comment_with_whitespace_is_refused() -> None:
    with pytest.raises(ValueError, match="whitespace"):
        generate_keypair("a b")


def test_the_key_survives_the_secret_round_trip(keypair: tuple[str, str]) -> None:
    private_pem, public = keypair
    job = seed_job()
    data = {
        k: base64.b64decode(v).decode()
        for k, v in render_ssh_secret(job, private_pem, public)["data"].items()
    }
    assert data["authorized_keys"] == public + "\n"
    assert public_of(data["id_rsa"]) == " ".join(data["authorized_keys"].split()[:2])
