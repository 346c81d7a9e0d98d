"""Certificates and keys for the local control plane, made with ``cryptography``.

One self-signed CA signs the apiserver's serving certificate and a client certificate per
identity, so RBAC sees the same users a real cluster has (system:kube-controller-manager,
system:kube-scheduler) and admin access goes through system:masters. Keys are ECDSA P-256
(fast to make); the service-account signing key is RSA, which every Kubernetes release accepts.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = dt.timedelta(days=365)


@dataclass(frozen=True)
class Identity:
    """A client certificate's subject: the user name and groups the apiserver will see."""

    file: str
    user: str
    groups: tuple[str, ...] = ()


ADMIN = Identity("admin", "aitj-admin", ("system:masters",))
CONTROLLER_MANAGER = Identity("kube-controller-manager", "system:kube-controller-manager")
SCHEDULER = Identity("kube-scheduler", "system:kube-scheduler")
KWOK = Identity("kwok", "kwok-controller", ("system:masters",))
# Real nodes' programs: kube-proxy (bound to system:node-proxier by the default RBAC policy),
# CoreDNS (a ClusterRole of ours), and the apiserver itself when it calls a kubelet for logs
# and exec (the kubelets accept clients the CA signed and ask the apiserver what they may do).
KUBE_PROXY = Identity("kube-proxy", "system:kube-proxy")
COREDNS = Identity("coredns", "aitj:coredns")
APISERVER_KUBELET_CLIENT = Identity(
    "apiserver-kubelet-client", "kube-apiserver-kubelet-client", ("system:masters",)
)
IDENTITIES = (ADMIN, CONTROLLER_MANAGER, SCHEDULER, KWOK, KUBE_PROXY, COREDNS, APISERVER_KUBELET_CLIENT)


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _name(common: str, orgs: tuple[str, ...] = ()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common))
    return x509.Name(attrs)


def _ca(directory: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    ca = x509.load_pem_x509_certificate((directory / "ca.crt").read_bytes())
    key = serialization.load_pem_private_key((directory / "ca.key").read_bytes(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    return ca, key


def _leaf(
    directory: Path, file: str, subject: x509.Name, usage: x509.ObjectIdentifier, sans: list[x509.GeneralName]
) -> None:
    """_leaf writes ``<file>.{crt,key}``: a certificate for ``subject`` signed by the CA in
    ``directory``."""
    ca, ca_key = _ca(directory)
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    key = _key()
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    _write_key(directory / f"{file}.key", key)
    _write_cert(directory / f"{file}.crt", builder.sign(ca_key, hashes.SHA256()))


def client_cert(directory: Path, ident: Identity) -> None:
    """client_cert writes ``<ident.file>.{crt,key}``: a client certificate for ``ident``
    signed by the CA already in ``directory``."""
    _leaf(directory, ident.file, _name(ident.user, ident.groups), ExtendedKeyUsageOID.CLIENT_AUTH, [])


def node_identity(node: str) -> Identity:
    """node_identity: who a real node's kubelet is to the apiserver: the Node authorizer
    grants ``system:node:<name>`` in ``system:nodes`` what that node needs, and no more."""
    return Identity(f"kubelet-{node}", f"system:node:{node}", ("system:nodes",))


def make_pki(directory: Path) -> None:
    """make_pki writes ca.{crt,key}, apiserver.{crt,key}, sa.{key,pub} and <identity>.{crt,key}."""
    directory.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    ca_key = _key()
    ca_name = _name("aitj-local-ca")
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    _write_key(directory / "ca.key", ca_key)
    _write_cert(directory / "ca.crt", ca)
    dns = [
        "localhost",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
    ]
    ips = ["127.0.0.1", "10.96.0.1"]
    sans: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
    sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    _leaf(directory, "apiserver", _name("kube-apiserver"), ExtendedKeyUsageOID.SERVER_AUTH, sans)
    for ident in IDENTITIES:
        client_cert(directory, ident)

    sa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write_key(directory / "sa.key", sa)
    (directory / "sa.pub").write_bytes(
        sa.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
