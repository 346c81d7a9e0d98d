"""Images without an outside registry (``aitj.devcluster.images``): the pure parts. The OCI
documents as the image-spec defines them, cache keys that change with every input and only
then, and the names the local registry stores the seed's images under."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from aitj.devcluster.images import SPECS, builder, hosts_toml, mirrored_ref, oci, rootfs
from aitj.devcluster.images.registry import config_yaml, split_ref
from aitj.devcluster.images.specs import HOROVOD, JOBBARRIER, PAUSE, input_key

# ---- OCI documents ---------------------------------------------------------------------------


def test_the_config_lists_the_layers_diff_ids_and_the_process() -> None:
    process = oci.Process(
        entrypoint=("/bin/sh",), cmd=("-c", "true"), user="65532:65532", exposed_ports=("22/tcp",)
    )
    config = oci.image_config(["sha256:aa", "sha256:bb"], process)
    assert config["rootfs"] == {"type": "layers", "diff_ids": ["sha256:aa", "sha256:bb"]}
    assert config["config"]["Entrypoint"] == ["/bin/sh"]
    assert config["config"]["Cmd"] == ["-c", "true"]
    assert config["config"]["User"] == "65532:65532"
    assert config["config"]["ExposedPorts"] == {"22/tcp": {}}
    assert (config["os"], config["architecture"]) == ("linux", "amd64")
    assert len(config["history"]) == 2


def test_an_unset_part_of_the_process_is_left_out() -> None:
    config = oci.image_config([], oci.Process(cmd=("sh",)))["config"]
    assert "Entrypoint" not in config and "User" not in config and "WorkingDir" not in config


def test_the_manifest_names_the_config_and_layers_by_digest_and_size() -> None:
    config = oci.Blob(oci.MEDIA_CONFIG, "sha256:c", 10)
    layer = oci.Layer(oci.Blob(oci.MEDIA_LAYER_GZIP, "sha256:l", 20), "sha256:d")
    manifest = oci.image_manifest(config, [layer])
    assert manifest == {
        "schemaVersion": 2,
        "mediaType": oci.MEDIA_MANIFEST,
        "config": {"mediaType": oci.MEDIA_CONFIG, "digest": "sha256:c", "size": 10},
        "layers": [{"mediaType": oci.MEDIA_LAYER_GZIP, "digest": "sha256:l", "size": 20}],
    }


def test_the_layout_index_tags_the_manifest() -> None:
    index = oci.layout_index(oci.Blob(oci.MEDIA_MANIFEST, "sha256:m", 5), "v0.9-1")
    assert index["manifests"][0]["annotations"] == {oci.REF_NAME: "v0.9-1"}
    assert index["manifests"][0]["digest"] == "sha256:m"


def test_a_written_image_is_a_valid_layout_whose_digests_match_their_bytes(tmp_path: Path) -> None:
    oci.init_layout(tmp_path)
    tar = oci.tar_entries(
        [oci.Entry("bin", mode=0o755), oci.Entry("bin/x", b"hi", 0o755), oci.Entry("bin/y", symlink="x")]
    )
    layer = oci.write_layer(tmp_path, io.BytesIO(tar))
    manifest_blob = oci.write_image(tmp_path, [layer], oci.Process(cmd=("x",)), "1")
    assert json.loads((tmp_path / "oci-layout").read_text()) == {"imageLayoutVersion": "1.0.0"}
    for path in (tmp_path / "blobs" / "sha256").iterdir():
        assert hashlib.sha256(path.read_bytes()).hexdigest() == path.name
    assert layer.diff_id == "sha256:" + hashlib.sha256(tar).hexdigest()
    blob, manifest = oci.manifest_of(tmp_path)
    assert blob == manifest_blob
    assert oci.image_size(tmp_path) == manifest["config"]["size"] + layer.blob.size
    with tarfile.open(tmp_path / "blobs" / "sha256" / layer.blob.digest.split(":")[1]) as t:
        members = {m.name: m for m in t.getmembers()}
    assert members["bin/y"].issym() and members["bin/y"].linkname == "x"
    assert members["bin/x"].mode == 0o755 and members["bin/x"].uid == 0 and members["bin/x"].mtime == 0


def test_the_same_layer_twice_gives_the_same_digest(tmp_path: Path) -> None:
    tar = oci.tar_entries([oci.Entry("etc/passwd", b"root:x:0:0::/root:/bin/sh\n")])
    (a := tmp_path / "a").mkdir()
    (b := tmp_path / "b").mkdir()
    oci.init_layout(a)
    oci.init_layout(b)
    assert oci.write_layer(a, io.BytesIO(tar)) == oci.write_layer(b, io.BytesIO(tar))


def test_the_busybox_root_has_its_applets_and_no_second_busybox() -> None:
    entries = rootfs.busybox_entries(b"\x7fELF", ["sh", "sleep", "nc", "busybox", "", "a/b"])
    paths = {e.path: e for e in entries}
    assert paths["bin/sh"].symlink == "busybox" and paths["bin/nc"].symlink == "busybox"
    assert paths["bin/busybox"].data == b"\x7fELF" and paths["tmp"].mode == 0o1777
    assert "bin/a/b" not in paths and "bin/" not in paths
    assert [e.path for e in entries].count("bin/busybox") == 1


# ---- cache keys ----------------------------------------------------------------------------


def test_the_key_changes_with_every_input_and_only_then() -> None:
    files = {"build.sh": b"echo", "src/aitj/x.py": b"x = 1"}
    key = input_key(JOBBARRIER, files, {"mmdebstrap": "[]"})
    assert key == input_key(JOBBARRIER, dict(reversed(files.items())), {"mmdebstrap": "[]"})
    changed = [
        input_key(JOBBARRIER, {**files, "src/aitj/x.py": b"x = 2"}, {"mmdebstrap": "[]"}),
        input_key(JOBBARRIER, {**files, "new.txt": b""}, {"mmdebstrap": "[]"}),
        input_key(JOBBARRIER, files, {"mmdebstrap": '["--include=python3"]'}),
        input_key(dataclasses.replace(JOBBARRIER, packages=("python3", "curl")), files, {"mmdebstrap": "[]"}),
        input_key(
            dataclasses.replace(JOBBARRIER, ref="registry.aitj.local/x:2"), files, {"mmdebstrap": "[]"}
        ),
    ]
    assert key not in changed and len(set(changed)) == len(changed)


def test_a_file_renamed_is_a_new_input() -> None:
    assert input_key(PAUSE, {"a": b"1"}) != input_key(PAUSE, {"b": b"1"})


def test_an_images_inputs_are_the_files_of_its_folder_not_what_running_them_left(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("print()")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "train.cpython-311.pyc").write_bytes(b"\0")
    (tmp_path / "stray.pyc").write_bytes(b"\0")
    spec = dataclasses.replace(PAUSE, name="files-test", kind="debian", source=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(type(spec), "files_dir", property(lambda _: tmp_path))
        files, _ = builder.inputs(spec, {})
    assert files == {"train.py": b"print()"}


def test_a_new_build_keeps_the_newest_other_build_and_no_unfinished_one(tmp_path: Path) -> None:
    for age, name in enumerate(["newest", "older", "oldest", "stopped.partial", "new.partial"]):
        (tmp_path / name).mkdir()
        os.utime(tmp_path / name, (1000 - age, 1000 - age))
    gone = builder.stale(tmp_path, tmp_path / "new.partial")
    assert sorted(p.name for p in gone) == ["older", "oldest", "stopped.partial"]
    assert builder.stale(tmp_path / "newest", tmp_path / "newest" / "x.partial") == []


def test_an_image_that_installs_aitj_gets_its_source_and_a_stub_readme(tmp_path: Path) -> None:
    for name in ("requirements.lock", "pyproject.toml", "Dockerfile", "README.md", "aitj/x.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    files = builder.source_files(tmp_path)
    assert files["aitj/x.py"] == b"aitj/x.py" and files["pyproject.toml"] == b"pyproject.toml"
    # The documentation is no input: editing it rebuilds no image.
    assert files["README.md"] == builder.README_STUB
    (tmp_path / "README.md").write_text("edited")
    assert builder.source_files(tmp_path) == files


def test_the_build_command_installs_build_packages_and_purges_them_after_the_script(tmp_path: Path) -> None:
    (tmp_path / "build.sh").write_text("true")
    argv = rootfs.mmdebstrap_argv(HOROVOD.packages, HOROVOD.build_packages, tmp_path, has_ca=True)
    include = next(a for a in argv if a.startswith("--include="))
    assert "python3-torch" in include and "pybind11-dev" in include
    hooks = [a for a in argv if a.startswith("--customize-hook=")]
    build = next(i for i, h in enumerate(hooks) if "build.sh" in h)
    purge = next(i for i, h in enumerate(hooks) if "apt-get purge" in h)
    assert build < purge and "g++" in hooks[purge] and "python3-torch" not in hooks[purge]
    assert "PIP_CERT=/tmp/aitj-build/ca.crt" in hooks[build]
    assert any(f'rm -rf "$1{rootfs.BUILD_DIR}"' in h for h in hooks[purge:]), "the CA bundle must not stay"
    assert argv[-4:-3] == ["-"], "the tar goes to stdout"


# ---- names in the local registry ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "local"),
    [
        (
            "registry.baidubce.com/cce-plugin-dev/horovod:master-0.2.0",
            "127.0.0.1:5000/cce-plugin-dev/horovod:master-0.2.0",
        ),
        (
            "registry.baidubce.com/cce-plugin-dev/jobbarrier:v0.9-1",
            "127.0.0.1:5000/cce-plugin-dev/jobbarrier:v0.9-1",
        ),
        ("registry.aitj.local/aitj:dev", "127.0.0.1:5000/aitj:dev"),
    ],
)
def test_an_image_is_stored_under_its_path_and_tag(ref: str, local: str) -> None:
    assert mirrored_ref(ref, "127.0.0.1:5000") == local


@pytest.mark.parametrize(
    "ref",
    [
        "horovod:latest",
        "docker.io/library/busybox:1",
        "registry.aitj.local/x",
        "registry.aitj.local/x@sha256:ab",
    ],
)
def test_a_ref_the_registry_cannot_mirror_is_refused(ref: str) -> None:
    with pytest.raises(ValueError):
        mirrored_ref(ref, "127.0.0.1:5000")


def test_every_image_has_a_mirrored_ref() -> None:
    for spec in SPECS.values():
        assert split_ref(spec.ref)[0] in ("registry.baidubce.com", "registry.aitj.local")


def test_the_seeds_images_keep_the_seeds_names() -> None:
    seed = (Path(__file__).parents[2] / "manifests/examples/horovod-elastic.yaml").read_text()
    assert f"image: {SPECS['horovod'].ref}" in seed
    assert f"image: {SPECS['jobbarrier'].ref}" in seed


def test_containerds_mirror_file_points_at_the_local_registry_over_http() -> None:
    text = hosts_toml("127.0.0.1:15000")
    assert 'server = "http://127.0.0.1:15000"' in text
    assert '[host."http://127.0.0.1:15000"]' in text and '"pull", "resolve"' in text


def test_the_registry_listens_on_loopback_only(tmp_path: Path) -> None:
    text = config_yaml(tmp_path, 15000)
    assert "addr: 127.0.0.1:15000" in text and f"rootdirectory: {tmp_path}" in text
