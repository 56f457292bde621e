//! The Debian package: the binary, its man page and completions, the systemd user unit and the
//! copyright file, written as dpkg-deb writes one (an `ar` of `debian-binary`, `control.tar.gz`
//! and `data.tar.gz`).

use std::path::{Path, PathBuf};

use anyhow::Result;
use md5::{Digest, Md5};

use crate::archive::{Entry, gzip, tar};
use crate::civil;
use crate::contents::{self, DESCRIPTION, Docs, MAINTAINER, NAME, Release, SUMMARY};

/// Lintian takes the strings of yaml-rust2 (the web configuration's parser, a pure-Rust port of
/// libyaml's scanner that keeps its messages) for a copy of the C libyaml: none is linked.
const LINTIAN_OVERRIDES: &str = "# yaml-rust2, a pure-Rust YAML parser ported from libyaml's design, keeps its messages;\n\
# no copy of the C library is linked.\n\
reasonix-exporter: embedded-library libyaml [usr/bin/reasonix-exporter]\n";

pub fn package(arch: &str, binary: &[u8], docs: &Docs, release: &Release, out: &Path) -> Result<PathBuf> {
    let version = format!("{}-1", release.version);
    let doc = format!("usr/share/doc/{NAME}");
    let data = vec![
        Entry::new(format!("usr/bin/{NAME}"), 0o755, binary),
        Entry::new(
            format!("usr/lib/systemd/user/{NAME}.service"),
            0o644,
            contents::packaged_user_unit(release)?,
        ),
        Entry::new(format!("usr/share/man/man1/{NAME}.1.gz"), 0o644, gzip(&docs.man)?),
        Entry::new(
            format!("usr/share/bash-completion/completions/{NAME}"),
            0o644,
            docs.completion("bash"),
        ),
        Entry::new(
            format!("usr/share/zsh/vendor-completions/_{NAME}"),
            0o644,
            docs.completion("zsh"),
        ),
        Entry::new(
            format!("usr/share/fish/vendor_completions.d/{NAME}.fish"),
            0o644,
            docs.completion("fish"),
        ),
        Entry::new(format!("{doc}/copyright"), 0o644, copyright(release)?),
        Entry::new(
            format!("usr/share/lintian/overrides/{NAME}"),
            0o644,
            LINTIAN_OVERRIDES.as_bytes(),
        ),
        Entry::new(
            format!("{doc}/changelog.Debian.gz"),
            0o644,
            gzip(changelog(&version, release).as_bytes())?,
        ),
    ];
    let installed_kib: usize = data.iter().map(|e| e.data.len().div_ceil(1024)).sum();
    let mut md5sums = String::new();
    for entry in &data {
        md5sums.push_str(&format!(
            "{}  {}\n",
            crate::hex(&Md5::digest(&entry.data)),
            entry.path
        ));
    }
    let description: String = contents::wrap(DESCRIPTION, 78)
        .iter()
        .map(|line| format!(" {line}\n"))
        .collect();
    let control = format!(
        "Package: {NAME}\nVersion: {version}\nArchitecture: {arch}\nMaintainer: {MAINTAINER}\n\
         Installed-Size: {installed_kib}\nDepends: libc6 (>= 2.17)\nSection: utils\n\
         Priority: optional\nHomepage: {}\nDescription: {SUMMARY}\n{description}",
        release.repository
    );
    let control = vec![
        Entry::new("control", 0o644, control),
        Entry::new("md5sums", 0o644, md5sums),
    ];
    let members = [
        ("debian-binary", b"2.0\n".to_vec()),
        ("control.tar.gz", gzip(&tar(&control, release.epoch)?)?),
        ("data.tar.gz", gzip(&tar(&data, release.epoch)?)?),
    ];
    let path = out.join(format!("{NAME}_{version}_{arch}.deb"));
    crate::write(&path, ar(&members, release.epoch))?;
    Ok(path)
}

/// A Unix `ar` archive, as dpkg-deb writes it: names without the trailing slash, members padded
/// to an even length.
fn ar(members: &[(&str, Vec<u8>)], epoch: u64) -> Vec<u8> {
    let mut out = b"!<arch>\n".to_vec();
    for (name, data) in members {
        let header = format!(
            "{name:<16}{epoch:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            0,
            0,
            "100644",
            data.len()
        );
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(data);
        if data.len() % 2 == 1 {
            out.push(b'\n');
        }
    }
    out
}

/// Debian's machine-readable copyright file. Apache-2.0 is in /usr/share/common-licenses; the
/// MIT text is given in full.
fn copyright(release: &Release) -> Result<String> {
    let mit = String::from_utf8(release.source_file("LICENSE-MIT")?)?;
    let mit: String = mit
        .lines()
        .map(|line| {
            if line.trim().is_empty() {
                " .\n".to_owned()
            } else {
                format!(" {line}\n")
            }
        })
        .collect();
    Ok(format!(
        "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\
         Upstream-Name: {NAME}\nSource: {}\n\n\
         Files: *\nCopyright: {} The {NAME} authors\nLicense: MIT or Apache-2.0\n\n\
         License: MIT\n{mit}\n\
         License: Apache-2.0\n On Debian systems, the full text of the Apache License, Version 2.0,\n \
         is in /usr/share/common-licenses/Apache-2.0.\n",
        release.repository,
        civil::utc(release.epoch).0
    ))
}

fn changelog(version: &str, release: &Release) -> String {
    format!(
        "{NAME} ({version}) unstable; urgency=medium\n\n  * Release {} (commit {}).\n\n -- {MAINTAINER}  {}\n",
        release.version,
        release.commit,
        civil::rfc2822(release.epoch)
    )
}
