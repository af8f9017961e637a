//! `cargo xtask bundle [--debug]`: the `.deb` and `.rpm` of A2 Studio, made
//! by the Tauri bundler's library: `a2-studio` and `a2` in `/usr/bin`, a
//! desktop entry that opens `.sqlite` files, icons at the usual sizes made
//! from one source image, the licence, and the runtime dependencies.

use std::path::{Path, PathBuf};

use tauri_bundler::bundle::{
    AppCategory, BundleBinary, BundleSettings, DebianSettings, PackageSettings, PackageType, RpmSettings,
    SettingsBuilder,
};

use crate::setup::workspace;
use crate::{cargo, run};

/// Icon sizes a desktop looks for in `hicolor`.
const ICON_SIZES: [u32; 6] = [16, 32, 64, 128, 256, 512];

/// The packages made, `.deb` first. `debug`: bundle the debug build (what
/// the test does: no second, optimised build of the app). `build`: build the
/// UI and the binaries first; the test bundles the ones its own build made.
pub fn bundle(debug: bool, build: bool) -> Result<Vec<PathBuf>, String> {
    if build {
        crate::setup::build_ui()?;
        let mut cargo_build = cargo();
        cargo_build.args(["build", "-p", "a2-studio", "-p", "a2-cli"]);
        if !debug {
            // The production binary serves the embedded UI through Tauri's own protocol.
            cargo_build.args(["--release", "--features", "a2-studio/custom-protocol"]);
        }
        run(cargo_build)?;
    }
    let root = workspace();
    let target = crate::setup::target_dir()?;
    let out = target.join(if debug { "debug" } else { "release" });
    let icons = icons(&root.join("src-tauri/icons/icon-source.png"), &out.join("bundle-icons"))?;
    let license = root.join("LICENSE");
    let desktop = root.join("xtask/templates/a2-studio.desktop");
    let description = "See inside any A2 event store and fix it: sessions, consumer lag, dead letters, \
                       redrive, pause, search; a desktop app and the `a2` command line.";
    let settings = SettingsBuilder::new()
        .project_out_directory(&out)
        .package_types(vec![PackageType::Deb, PackageType::Rpm])
        .package_settings(PackageSettings {
            product_name: "a2-studio".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "A2 Studio: see inside any A2 event store and fix it".into(),
            homepage: None,
            authors: Some(vec!["A2 Studio authors <a2-studio@localhost>".into()]),
            default_run: Some("a2-studio".into()),
        })
        .bundle_settings(BundleSettings {
            identifier: Some("dev.a2.studio".into()),
            icon: Some(icons),
            license: Some("MIT OR Apache-2.0".into()),
            license_file: Some(license.clone()),
            category: Some(AppCategory::DeveloperTool),
            short_description: Some("See inside any A2 event store and fix it".into()),
            long_description: Some(description.into()),
            deb: DebianSettings {
                depends: Some(vec!["libwebkit2gtk-4.1-0".into(), "libgtk-3-0".into()]),
                section: Some("devel".into()),
                desktop_template: Some(desktop.clone()),
                files: [(PathBuf::from("/usr/share/doc/a2-studio/copyright"), license.clone())].into(),
                ..DebianSettings::default()
            },
            rpm: RpmSettings {
                depends: Some(vec!["webkit2gtk4.1".into(), "gtk3".into()]),
                release: "1".into(),
                desktop_template: Some(desktop),
                files: [(PathBuf::from("/usr/share/licenses/a2-studio/LICENSE"), license)].into(),
                ..RpmSettings::default()
            },
            ..BundleSettings::default()
        })
        .binaries(vec![BundleBinary::new("a2-studio".into(), true), BundleBinary::new("a2".into(), false)])
        .build()
        .map_err(|e| format!("the bundler's settings: {e}"))?;
    let bundles = tauri_bundler::bundle_project(&settings).map_err(|e| format!("the bundler failed: {e}"))?;
    let mut made: Vec<PathBuf> = bundles.into_iter().flat_map(|b| b.bundle_paths).collect();
    made.sort_by_key(|p| p.extension().is_none_or(|e| e != "deb"));
    for path in &made {
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        println!("xtask: bundled {} ({:.1} MB)", path.display(), size as f64 / 1e6);
    }
    Ok(made)
}

/// `source` scaled to each of [`ICON_SIZES`], as `<dir>/<n>x<n>.png`.
fn icons(source: &Path, dir: &Path) -> Result<Vec<String>, String> {
    let image = image::open(source).map_err(|e| format!("cannot read the icon {}: {e}", source.display()))?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    ICON_SIZES
        .iter()
        .map(|&n| {
            let path = dir.join(format!("{n}x{n}.png"));
            image
                .resize_exact(n, n, image::imageops::FilterType::Lanczos3)
                .save(&path)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            Ok(path.display().to_string())
        })
        .collect()
}
