"""The GPU exporter's server as its unit runs it (--tls-cert, --tls-key, --password-file, parsed by the
program itself) on a free loopback port, with a certificate made here and the recorded two-GPU host of
test_gpu_exporter: HTTPS with the scrape login answers, anything else is refused."""

import base64
import datetime
import http.client
import ipaddress
import json
import ssl
import threading

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from conftest import load_plugin
from test_gpu_exporter import (EXPECTED_TWO_GPUS, FIXTURES, NOTEBOOK_CONTAINER, NOTEBOOK_CONTAINER_ID, USERS, FakeDocker,
                               exporter, fake_proc, fake_pynvml)

htpasswd_entry = load_plugin("modules", "htpasswd_entry")


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """A self-signed certificate for 127.0.0.1 (its own CA), as the cluster CA's would name the address."""
    where = tmp_path_factory.mktemp("tls")
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gpu-worker-1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("gpu-worker-1"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    (where / "exporter.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (where / "exporter.key").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                           serialization.NoEncryption()))
    return where / "exporter.crt", where / "exporter.key"


@pytest.fixture
def password_file(tmp_path):
    """The scrape account's line as the role writes it (sparkfleet.cluster.htpasswd_entry, scheme pbkdf2-sha256)."""
    line, _kept = htpasswd_entry.pbkdf2_entry("prometheus", "s3cret", None)
    path = tmp_path / "scrape.passwd"
    path.write_text(line + "\n")
    return path


def collector(tmp_path):
    """test_gpu_exporter's recorded two-GPU host: a notebook and a Spark executor on GPU 0."""
    holders = exporter.Holders(FakeDocker({NOTEBOOK_CONTAINER_ID: NOTEBOOK_CONTAINER}),
                               proc_root=str(fake_proc(tmp_path / "proc")), user_name=USERS.get)
    made = exporter.Collector(fake_pynvml(json.loads((FIXTURES / "nvml_t4_x2.json").read_text())), "gpu-worker-1", holders)
    made.start()
    return made


@pytest.fixture
def serve(tmp_path, certificate, password_file):
    servers = []

    def start(*extra):
        argv = ["--listen", "127.0.0.1:0", "--host", "gpu-worker-1", *extra]
        server = exporter.build_server(exporter.parse_args(argv), collector(tmp_path))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server.server_address[1]
    yield lambda: start("--tls-cert", str(certificate[0]), "--tls-key", str(certificate[1]),
                        "--password-file", str(password_file))
    for server in servers:
        server.shutdown()
        server.server_close()


def get(port, auth=None, ca=None, tls=True, **context_options):
    """(status, headers, body) of GET /metrics."""
    if tls:
        context = ssl.create_default_context(cafile=str(ca))
        for name, value in context_options.items():
            setattr(context, name, value)
        connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
    else:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Authorization": "Basic " + base64.b64encode(auth.encode()).decode()} if auth else {}
    try:
        connection.request("GET", "/metrics", headers=headers)
        response = connection.getresponse()
        return response.status, response.headers, response.read().decode()
    finally:
        connection.close()


def test_https_with_the_scrape_login_gets_the_metrics(serve, certificate):
    status, headers, body = get(serve(), "prometheus:s3cret", ca=certificate[0])
    assert (status, headers["Content-Type"], body) == (200, "text/plain; version=0.0.4; charset=utf-8", EXPECTED_TWO_GPUS)


@pytest.mark.parametrize("auth", [None, "prometheus:wrong", "prometheus:", "admin:s3cret", "prometheus"])
def test_without_the_login_or_with_a_wrong_one_it_is_refused(serve, certificate, auth):
    status, headers, body = get(serve(), auth, ca=certificate[0])
    assert status == 401 and headers["WWW-Authenticate"] == 'Basic realm="gpu exporter"'
    assert "sparkfleet_gpu" not in body


def test_plain_http_gets_no_answer(serve, certificate):
    port = serve()
    with pytest.raises((http.client.HTTPException, ConnectionError)):
        get(port, "prometheus:s3cret", tls=False)
    # The server still serves the next client.
    assert get(port, "prometheus:s3cret", ca=certificate[0])[0] == 200


def test_a_client_that_does_not_trust_the_ca_stops_at_the_handshake(serve, tmp_path):
    other = ssl.create_default_context()  # the system's roots only
    with pytest.raises(ssl.SSLCertVerificationError):
        connection = http.client.HTTPSConnection("127.0.0.1", serve(), context=other, timeout=10)
        connection.request("GET", "/metrics")


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_tls_below_1_2_is_refused(serve, certificate):
    assert exporter.tls_context(*certificate).minimum_version == ssl.TLSVersion.TLSv1_2
    with pytest.raises((ssl.SSLError, ConnectionError)):
        get(serve(), "prometheus:s3cret", ca=certificate[0],
            minimum_version=ssl.TLSVersion.TLSv1, maximum_version=ssl.TLSVersion.TLSv1_1)


def test_a_certificate_without_its_key_is_refused(certificate):
    with pytest.raises(SystemExit):
        exporter.parse_args(["--listen", "127.0.0.1:0", "--tls-cert", str(certificate[0])])


def test_the_modules_line_is_what_the_exporter_checks():
    line, _kept = htpasswd_entry.pbkdf2_entry("prometheus", "s3cret", None)
    assert exporter.check_password(line, "prometheus", "s3cret")
    assert not exporter.check_password(line, "prometheus", "s3cret ")
