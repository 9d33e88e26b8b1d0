"""image/oci.py: OCI archives from directory trees, byte-for-byte reproducible."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tarfile

import pytest
from image_support import IMAGE, layer_file, layer_members, load, read_archive

oci = load("oci")


def tree(root, owner_of_disk=None):
    """A small root filesystem: dirs, a file, an executable, a symlink, a hard link."""
    (root / "etc").mkdir(parents=True)
    (root / "etc/passwd").write_text("root:x:0:0::/root:/sbin/nologin\n")
    (root / "usr/bin").mkdir(parents=True)
    (root / "usr/bin/app").write_bytes(b"\x7fELF pretend")
    (root / "usr/bin/app").chmod(0o755)
    (root / "usr/bin/alias").symlink_to("app")
    os.link(root / "etc/passwd", root / "etc/passwd-")
    (root / "home/nonroot").mkdir(parents=True)
    (root / "home/nonroot").chmod(0o700)
    (root / "tmp").mkdir()
    (root / "tmp").chmod(0o1777)
    return root


def write(tmp_path, *extra, layers=None, out="img.tar"):
    layers = layers or [tree(tmp_path / "rootfs")]
    argv = [a for layer in layers for a in ("--layer", str(layer))]
    argv += ["--ref", "example/app:1.0", "--out", str(tmp_path / out), *extra]
    assert oci.main(argv) == 0
    return tmp_path / out


def error(tmp_path, capsys, *argv):
    code = oci.main([*argv])
    assert code == 2
    return capsys.readouterr().err


FULL = ["--user", "65532:65532", "--entrypoint", '["/usr/bin/app"]', "--cmd", '["--serve"]', "--env", "A=1",
        "--env", "PATH=/usr/bin", "--workdir", "/", "--label", "org.opencontainers.image.version=1.0",
        "--label", "org.opencontainers.image.licenses=Apache-2.0", "--created", "2026-01-02T03:04:05Z"]


def test_same_trees_give_the_same_bytes_whatever_their_mtimes_owners_and_paths(tmp_path):
    first = write(tmp_path / "a", *FULL, layers=[tree(tmp_path / "a/one")])
    second_root = tree(tmp_path / "b/another-name")
    for p in second_root.rglob("*"):
        os.utime(p, (1_000_000, 1_000_000), follow_symlinks=False)
    second = write(tmp_path / "b", *FULL, layers=[second_root])
    assert first.read_bytes() == second.read_bytes()


def test_digests_sizes_and_diff_ids_match_the_blobs(tmp_path):
    path = write(tmp_path, *FULL)
    a = read_archive(path)
    with tarfile.open(path) as t:
        for name in a["names"]:
            if name.startswith("blobs/sha256/") and name.count("/") == 2:
                data = t.extractfile(name).read()
                assert hashlib.sha256(data).hexdigest() == name.rsplit("/", 1)[1], name
        layer_blob = t.extractfile("blobs/sha256/" + a["manifest"]["layers"][0]["digest"][7:]).read()
    assert a["manifest"]["layers"][0]["size"] == len(layer_blob)
    assert a["manifest"]["layers"][0]["mediaType"] == "application/vnd.oci.image.layer.v1.tar+gzip"
    assert a["config"]["rootfs"]["diff_ids"] == ["sha256:" + hashlib.sha256(a["layers"][0]).hexdigest()]
    assert a["names"] == sorted(["blobs", "blobs/sha256", "index.json", "manifest.json", "oci-layout"] + [
        "blobs/sha256/" + d[7:] for d in
        [a["index"]["manifests"][0]["digest"], a["manifest"]["config"]["digest"], a["manifest"]["layers"][0]["digest"]]
    ])


def test_index_names_the_image_for_oci_and_containerd_and_docker_load(tmp_path):
    a = read_archive(write(tmp_path, *FULL))
    entry = a["index"]["manifests"][0]
    assert entry["annotations"] == {"org.opencontainers.image.ref.name": "example/app:1.0",
                                    "io.containerd.image.name": "example/app:1.0"}
    assert entry["mediaType"] == "application/vnd.oci.image.manifest.v1+json"
    assert entry["platform"]["os"] == "linux"
    with tarfile.open(tmp_path / "img.tar") as t:
        docker = json.loads(t.extractfile("manifest.json").read())
        assert json.loads(t.extractfile("oci-layout").read()) == {"imageLayoutVersion": "1.0.0"}
    assert docker[0]["RepoTags"] == ["example/app:1.0"]
    assert docker[0]["Config"] == "blobs/sha256/" + a["manifest"]["config"]["digest"][7:]


def test_config_carries_user_entrypoint_cmd_env_workdir_labels_and_the_creation_time(tmp_path):
    c = read_archive(write(tmp_path, *FULL, "--architecture", "x86_64"))["config"]
    assert c["config"] == {
        "User": "65532:65532", "Entrypoint": ["/usr/bin/app"], "Cmd": ["--serve"], "Env": ["A=1", "PATH=/usr/bin"],
        "WorkingDir": "/",
        "Labels": {"org.opencontainers.image.version": "1.0", "org.opencontainers.image.licenses": "Apache-2.0"},
    }
    assert (c["created"], c["architecture"], c["os"]) == ("2026-01-02T03:04:05Z", "amd64", "linux")
    assert [h["created"] for h in c["history"]] == ["2026-01-02T03:04:05Z"]


def test_layer_entries_sorted_with_fixed_mtime_root_owner_and_the_owners_file_applied(tmp_path):
    owners = tmp_path / "owners.txt"
    owners.write_text("# comment\n/home/nonroot 65532 65532 0750\n/usr/bin/app 0 0\n")
    a = read_archive(write(tmp_path, *FULL, "--owners", str(owners)))
    members = layer_members(a["layers"][0])
    names = [m.name for m in members]
    assert names == ["etc", "etc/passwd", "etc/passwd-", "home", "home/nonroot", "tmp", "usr", "usr/bin",
                     "usr/bin/alias", "usr/bin/app"]
    by = {m.name: m for m in members}
    assert {m.mtime for m in members} == {1767323045}
    assert (by["home/nonroot"].uid, by["home/nonroot"].gid, by["home/nonroot"].mode) == (65532, 65532, 0o750)
    assert all((m.uid, m.gid, m.uname, m.gname) == (0, 0, "", "") for m in members if m.name != "home/nonroot")
    assert by["tmp"].mode == 0o1777 and by["usr/bin/app"].mode == 0o755 and by["etc/passwd"].mode == 0o644
    assert by["usr/bin/alias"].issym() and by["usr/bin/alias"].linkname == "app"
    assert by["etc/passwd-"].islnk() and by["etc/passwd-"].linkname == "etc/passwd"
    assert layer_file(a["layers"][0], "usr/bin/app") == b"\x7fELF pretend"


def test_layers_stack_in_order_and_uncompressed_blobs_are_the_tars(tmp_path):
    base = tree(tmp_path / "base")
    top = tmp_path / "top"
    (top / "usr/local/bin").mkdir(parents=True)
    (top / "usr/local/bin/x").write_text("x")
    a = read_archive(write(tmp_path, "--compression", "none", layers=[base, top]))
    assert len(a["layers"]) == 2
    assert [m.name for m in layer_members(a["layers"][1])] == ["usr", "usr/local", "usr/local/bin", "usr/local/bin/x"]
    assert [layer["mediaType"] for layer in a["manifest"]["layers"]] == ["application/vnd.oci.image.layer.v1.tar"] * 2
    # Uncompressed, a layer's digest is its diff_id.
    assert [layer["digest"] for layer in a["manifest"]["layers"]] == a["config"]["rootfs"]["diff_ids"]


def test_source_date_epoch_sets_the_creation_time_when_created_is_not_given(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "86400")
    a = read_archive(write(tmp_path))
    assert a["config"]["created"] == "1970-01-02T00:00:00Z"
    assert {m.mtime for m in layer_members(a["layers"][0])} == {86400}


@pytest.mark.parametrize("argv, message", [
    (["--ref", "App:1"], "--ref 'App:1': expected NAME:TAG in lower case"),
    (["--ref", "app"], "--ref 'app': expected NAME:TAG"),
    (["--entrypoint", "/bin/app"], "--entrypoint '/bin/app': expected a JSON list of strings"),
    (["--label", "novalue"], "--label 'novalue': expected KEY=VALUE"),
    (["--label", "a=1", "--label", "a=2"], "--label a is given twice ('1' and '2')"),
    (["--env", "=x"], "--env '=x': expected KEY=VALUE"),
    (["--created", "2026-01-02T03:04:05"], "--created '2026-01-02T03:04:05': give a time zone"),
    (["--created", "yesterday"], "--created 'yesterday': expected an RFC 3339 time"),
    (["--user", "a b"], "--user 'a b': expected UID[:GID]"),
    (["--architecture", "vax"], "--architecture 'vax': expected one of"),
])
def test_bad_options_are_refused_naming_the_option_the_value_and_what_is_expected(tmp_path, capsys, argv, message):
    root = tree(tmp_path / "rootfs")
    base = ["--layer", str(root), "--ref", "app:1", "--out", str(tmp_path / "x.tar")]
    err = error(tmp_path, capsys, *base, *argv)
    assert message in err
    assert not (tmp_path / "x.tar").exists()


def test_missing_layer_fifo_and_owners_problems_are_refused(tmp_path, capsys):
    out = ["--ref", "app:1", "--out", str(tmp_path / "x.tar")]
    assert "--layer /nonexistent: not a directory" in error(tmp_path, capsys, "--layer", "/nonexistent", *out)
    root = tree(tmp_path / "rootfs")
    owners = tmp_path / "owners.txt"
    owners.write_text("/moved 1 1 0700\n")
    assert "/moved is in no layer" in error(tmp_path, capsys, "--layer", str(root), "--owners", str(owners), *out)
    owners.write_text("/etc one 1\n")
    err = error(tmp_path, capsys, "--layer", str(root), "--owners", str(owners), *out)
    assert "line 1: '/etc one 1': expected PATH UID GID [MODE]" in err
    os.mkfifo(root / "tmp/fifo")
    assert "tmp/fifo is a device, FIFO or socket" in error(tmp_path, capsys, "--layer", str(root), *out)


def test_help_documents_the_command_line():
    out = subprocess.run([sys.executable, str(IMAGE / "oci.py"), "--help"], capture_output=True, text=True, check=True)
    for option in ["--layer DIR", "--ref NAME:TAG", "--out FILE.tar", "--owners FILE", "--user UID:GID",
                   "--entrypoint JSON", "--cmd JSON", "--env KEY=VALUE", "--workdir DIR", "--label KEY=VALUE",
                   "--created RFC3339", "--compression", "ctr images import"]:
        assert option in out.stdout, option


def test_ls_lists_the_image_files_with_whiteouts_applied(tmp_path, capsys):
    base = tree(tmp_path / "base")
    top = tmp_path / "top"
    (top / "etc").mkdir(parents=True)
    (top / "etc/.wh.passwd-").write_text("")
    (top / "usr/bin").mkdir(parents=True)
    (top / "usr/bin/.wh..wh..opq").write_text("")
    (top / "usr/bin/new").write_text("n")
    archive = write(tmp_path, "--user", "1:1", layers=[base, top])
    capsys.readouterr()
    ls = load("ls")
    assert ls.main([str(archive)]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [e["path"] for e in listed] == ["/etc", "/etc/passwd", "/home", "/home/nonroot", "/tmp", "/usr", "/usr/bin",
                                           "/usr/bin/new"]
    assert listed[-1] == {"path": "/usr/bin/new", "type": "file", "uid": 0, "gid": 0, "mode": "0644", "size": 1,
                          "link": ""}
    assert ls.main(["--ref", str(archive)]) == 0 and capsys.readouterr().out == "example/app:1.0\n"
    assert ls.main(["--config", str(archive)]) == 0
    assert json.loads(capsys.readouterr().out)["config"]["User"] == "1:1"
    assert ls.main([str(tmp_path / "base/etc/passwd")]) == 1
    assert "image/ls.py" in capsys.readouterr().err
