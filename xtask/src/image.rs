//! The OCI image, as an OCI image layout in a tar (`podman load`, `skopeo copy oci-archive:`).
//!
//! No base image: one layer with the binary, the C library it links (this machine's Debian
//! glibc, as distroless images carry Debian's), CA certificates for a collector behind TLS, an
//! unprivileged user and the two folders the exporter uses: the ledger, mounted read-only at
//! `/ledger/stats`, and its state at `/state`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::json;

use crate::archive::{Entry, gzip, tar};
use crate::contents::{NAME, Release, SUMMARY};
use crate::{civil, run_checked, sha256_hex};

/// The user the exporter runs as: not root, and the uid earlier images used, so that a state
/// volume they wrote stays writable.
const USER: u64 = 10_001;
const CA_CERTIFICATES: &str = "/etc/ssl/certs/ca-certificates.crt";

pub fn image(arch: &str, binary: &Path, release: &Release, out: &Path) -> Result<PathBuf> {
    let layer_tar = tar(&root_fs(binary, release)?, release.epoch)?;
    let layer_tar_digest = sha256_hex(&layer_tar);
    let layer = gzip(&layer_tar)?;
    let created = civil::rfc3339(release.epoch);
    let labels = json!({
        "org.opencontainers.image.created": created,
        "org.opencontainers.image.description": SUMMARY,
        "org.opencontainers.image.licenses": "MIT OR Apache-2.0",
        "org.opencontainers.image.revision": release.commit,
        "org.opencontainers.image.source": release.repository,
        "org.opencontainers.image.title": NAME,
        "org.opencontainers.image.version": release.version,
    });
    let config = json!({
        "architecture": arch,
        "os": "linux",
        "created": created,
        "config": {
            "User": format!("{USER}:{USER}"),
            "Env": [
                "PATH=/usr/bin",
                "REASONIX_EXPORTER_STATS_DIR=/ledger/stats",
                "REASONIX_EXPORTER_STATE_DIR=/state",
                "REASONIX_EXPORTER_PROMETHEUS=0.0.0.0:10155",
            ],
            "Entrypoint": [format!("/usr/bin/{NAME}")],
            "Cmd": ["run"],
            "ExposedPorts": { "10155/tcp": {} },
            "Volumes": { "/state": {} },
            "WorkingDir": "/state",
            "Labels": labels,
        },
        "rootfs": { "type": "layers", "diff_ids": [format!("sha256:{layer_tar_digest}")] },
        "history": [{ "created": created, "created_by": "cargo xtask dist" }],
    });
    let config = serde_json::to_vec(&config)?;
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": descriptor("application/vnd.oci.image.config.v1+json", &config),
        "layers": [descriptor("application/vnd.oci.image.layer.v1.tar+gzip", &layer)],
        "annotations": labels,
    }))?;
    let mut manifest_descriptor = descriptor("application/vnd.oci.image.manifest.v1+json", &manifest);
    manifest_descriptor["platform"] = json!({ "architecture": arch, "os": "linux" });
    // The name `podman load` and `docker load` give it, the one deploy/compose runs.
    let reference = format!("{NAME}:{}", release.version);
    manifest_descriptor["annotations"] = json!({
        "io.containerd.image.name": format!("docker.io/library/{reference}"),
        "org.opencontainers.image.ref.name": reference,
    });
    let index = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [manifest_descriptor],
    }))?;
    let blob_path = |data: &[u8]| format!("blobs/sha256/{}", sha256_hex(data));
    // Docker's classic image store loads `manifest.json` (as `docker save` writes it beside
    // the OCI layout); podman and containerd read the layout.
    let docker = serde_json::to_vec(&json!([{
        "Config": blob_path(&config),
        "RepoTags": [reference],
        "Layers": [blob_path(&layer)],
    }]))?;
    let layout = vec![
        Entry::new("oci-layout", 0o644, br#"{"imageLayoutVersion":"1.0.0"}"#.to_vec()),
        Entry::new("index.json", 0o644, index),
        Entry::new("manifest.json", 0o644, docker),
        Entry::new(blob_path(&config), 0o644, config),
        Entry::new(blob_path(&manifest), 0o644, manifest),
        Entry::new(blob_path(&layer), 0o644, layer),
    ];
    let path = out.join(format!("{NAME}-{}-oci-{arch}.tar", release.version));
    crate::write(&path, tar(&layout, release.epoch)?)?;
    Ok(path)
}

fn descriptor(media_type: &str, data: &[u8]) -> serde_json::Value {
    json!({ "mediaType": media_type, "digest": format!("sha256:{}", sha256_hex(data)), "size": data.len() })
}

/// The image's one layer.
fn root_fs(binary: &Path, release: &Release) -> Result<Vec<Entry>> {
    let mut entries = vec![
        Entry::new(format!("usr/bin/{NAME}"), 0o755, crate::read(binary)?),
        Entry::new(
            "etc/passwd",
            0o644,
            format!(
                "root:x:0:0:root:/root:/sbin/nologin\nreasonix:x:{USER}:{USER}:{NAME}:/state:/sbin/nologin\n"
            ),
        ),
        Entry::new("etc/group", 0o644, format!("root:x:0:\nreasonix:x:{USER}:\n")),
        Entry::new(&CA_CERTIFICATES[1..], 0o644, read_host(CA_CERTIFICATES)?),
        Entry::new(
            format!("usr/share/doc/{NAME}/LICENSE-MIT"),
            0o644,
            release.source_file("LICENSE-MIT")?,
        ),
        Entry::new(
            format!("usr/share/doc/{NAME}/LICENSE-APACHE"),
            0o644,
            release.source_file("LICENSE-APACHE")?,
        ),
        Entry::new(
            "usr/share/doc/libc6/copyright",
            0o644,
            read_host("/usr/share/doc/libc6/copyright")?,
        ),
        Entry::new(
            "usr/share/doc/ca-certificates/copyright",
            0o644,
            read_host("/usr/share/doc/ca-certificates/copyright")?,
        ),
        Entry::folder("state", 0o700, USER),
        Entry::folder("ledger/stats", 0o755, 0),
        Entry::folder("tmp", 0o1777, 0),
    ];
    for library in linked_libraries(binary)? {
        entries.push(Entry::new(&library[1..], 0o755, read_host(&library)?));
    }
    Ok(entries)
}

/// The shared libraries `binary` loads, and its loader, as `ldd` finds them here.
fn linked_libraries(binary: &Path) -> Result<Vec<String>> {
    let out = run_checked(Command::new("ldd").arg(binary), "ldd (to find the C library)")?;
    let mut libraries = Vec::new();
    for line in String::from_utf8_lossy(&out).lines() {
        // "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or "/lib64/ld-linux-x86-64.so.2 (0x...)"
        let path = match line.split_once("=>") {
            Some((_, found)) => found.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        match path {
            Some(path) if path.starts_with('/') => libraries.push(path.to_owned()),
            Some(_) if line.contains("linux-vdso") => {}
            _ => bail!("ldd: cannot read {line:?}"),
        }
    }
    libraries.sort();
    Ok(libraries)
}

fn read_host(path: &str) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| {
        format!("{path}: the image copies it from this machine (apt-get install libc6 ca-certificates)")
    })
}
