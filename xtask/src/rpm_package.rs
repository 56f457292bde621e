//! The RPM package: the same files as the Debian package, in RPM's places (rpm-rs writes it).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rpm::{BuildConfig, CompressionType, Dependency, FileOptions, PackageBuilder};

use crate::archive::gzip;
use crate::contents::{self, DESCRIPTION, Docs, MAINTAINER, NAME, Release, SUMMARY};

pub fn package(arch: &str, binary: &[u8], docs: &Docs, release: &Release, out: &Path) -> Result<PathBuf> {
    let epoch = u32::try_from(release.epoch).context("SOURCE_DATE_EPOCH past 2106")?;
    let config = BuildConfig::v4()
        .source_date(epoch)
        .compression(CompressionType::Gzip);
    let mut builder = PackageBuilder::new(NAME, &release.version, "MIT OR Apache-2.0", arch, SUMMARY);
    builder
        .using_config(config)
        .release("1")
        .url(release.repository.clone())
        .description(contents::wrap(DESCRIPTION, 79).join("\n"))
        .packager(MAINTAINER)
        .vendor(format!("The {NAME} authors"))
        .group("Applications/System")
        .build_host("reasonix-exporter-dist")
        .add_changelog_entry(
            format!("{MAINTAINER} - {}-1", release.version),
            format!("- Release {} (commit {}).", release.version, release.commit),
            epoch,
        )
        .requires(Dependency::any("glibc"));
    let licenses = format!("/usr/share/licenses/{NAME}");
    builder
        .with_file_contents(
            binary,
            FileOptions::new(format!("/usr/bin/{NAME}")).permissions(0o755),
        )?
        .with_file_contents(
            contents::packaged_user_unit(release)?,
            FileOptions::new(format!("/usr/lib/systemd/user/{NAME}.service")).permissions(0o644),
        )?
        .with_file_contents(
            gzip(&docs.man)?,
            FileOptions::new(format!("/usr/share/man/man1/{NAME}.1.gz"))
                .permissions(0o644)
                .doc(),
        )?
        .with_file_contents(
            docs.completion("bash"),
            FileOptions::new(format!("/usr/share/bash-completion/completions/{NAME}")).permissions(0o644),
        )?
        .with_file_contents(
            docs.completion("zsh"),
            FileOptions::new(format!("/usr/share/zsh/site-functions/_{NAME}")).permissions(0o644),
        )?
        .with_file_contents(
            docs.completion("fish"),
            FileOptions::new(format!("/usr/share/fish/vendor_completions.d/{NAME}.fish")).permissions(0o644),
        )?
        .with_dir_entry(FileOptions::dir(licenses.clone()).permissions(0o755))?;
    for license in ["LICENSE-MIT", "LICENSE-APACHE"] {
        builder.with_file_contents(
            release.source_file(license)?,
            FileOptions::new(format!("{licenses}/{license}"))
                .permissions(0o644)
                .license(),
        )?;
    }
    let package = builder.build().context("building the RPM")?;
    let path = out.join(format!("{NAME}-{}-1.{arch}.rpm", release.version));
    package.write_file(&path).context("writing the RPM")?;
    Ok(path)
}
