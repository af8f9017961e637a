//! `a2-studio`: the A2 Studio desktop app. A thin Tauri shell: its commands
//! are the Studio's (`a2-studio-api`), its UI is `ui/dist`, embedded.
//! `--serve` serves the same UI and commands over HTTP instead of a window.

#![cfg_attr(all(not(debug_assertions), target_os = "windows"), windows_subsystem = "windows")]

mod commands;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use a2_studio_api::{profiles, sqlite_url, web, ConnectionOpen, Limits, Studio};
use clap::Parser;

#[derive(Parser)]
#[command(name = "a2-studio", version = a2_studio_api::VERSION, about = "A2 Studio: see inside any A2 store and fix it")]
struct Args {
    /// Open this store at start: sqlite:PATH, postgres://… or memory:.
    #[arg(long)]
    store: Option<String>,
    /// A read-only ceiling for the whole process: no connection it opens,
    /// now or later, can be read-write.
    #[arg(long)]
    read_only: bool,
    /// Open this SQLite dev store, seeding the demo when the file is new.
    #[arg(long, conflicts_with = "store")]
    dev_store: Option<PathBuf>,
    /// Keep demo traffic flowing on the demo store (its consumers run in the app).
    #[arg(long)]
    demo_traffic: bool,
    /// Serve the UI over HTTP on 127.0.0.1 instead of opening a window.
    #[arg(long)]
    serve: bool,
    /// The port for `--serve` (0: any free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// A SQLite file to open, as a file manager's "Open with" passes it: read-only
    /// until the window is asked for read-write. One that is not an A2 store is
    /// left untouched and the connect screen shows.
    #[arg(conflicts_with_all = ["store", "dev_store"])]
    file: Option<PathBuf>,
    /// Write `ui/src/bindings.ts` from the commands and exit.
    #[arg(long)]
    export_bindings: bool,
}

/// The app's context, made in one place so the UI is embedded once.
fn context() -> tauri::Context<tauri::Wry> {
    tauri::generate_context!("../tauri.conf.json")
}

/// The embedded UI, served by the web mode.
struct Embedded(tauri::Context<tauri::Wry>);

impl web::Assets for Embedded {
    fn get(&self, path: &str) -> Option<Vec<u8>> {
        let key = tauri::utils::assets::AssetKey::from(path);
        self.0.assets().get(&key).map(|bytes| bytes.into_owned())
    }
}

fn main() -> ExitCode {
    // Before any thread starts (see prepare_keychain).
    profiles::prepare_keychain();
    tracing_subscriber::fmt().with_writer(std::io::stderr).init();
    let args = Args::parse();
    if args.export_bindings {
        return match commands::bindings().and_then(|text| {
            std::fs::write(commands::BINDINGS_PATH, text).map_err(|e| format!("cannot write the bindings: {e}"))
        }) {
            Ok(()) => {
                println!("wrote {}", commands::BINDINGS_PATH);
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("a2-studio: {error}");
                ExitCode::FAILURE
            }
        };
    }
    let config_dir = match profiles::default_dir() {
        Ok(dir) => dir,
        Err(error) => {
            eprintln!("a2-studio: {}", error.message);
            return ExitCode::FAILURE;
        }
    };
    // Served to a browser, a page opens only the store named here and saved profiles.
    let started_with =
        args.store.clone().or_else(|| args.dev_store.as_ref().or(args.file.as_ref()).map(|p| sqlite_url(p)));
    let limits = Limits { read_only: args.read_only, web: args.serve, started_with, ..Limits::default() };
    let studio = Arc::new(Studio::with_limits(&config_dir, limits));
    if let Err(error) = tauri::async_runtime::block_on(open_at_start(&studio, &args)) {
        eprintln!("a2-studio: {error}");
        return ExitCode::from(1);
    }
    let result = if args.serve { serve(studio, args.port) } else { window(studio) };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("a2-studio: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn open_at_start(studio: &Studio, args: &Args) -> Result<(), a2_studio_api::ApiError> {
    // Demo traffic runs the demo's consumers here, so the app hosts them.
    studio.set_host_demo(args.demo_traffic);
    if let Some(path) = &args.dev_store {
        studio.open_dev_store(path).await?;
    } else if let Some(file) = &args.file {
        // Started from a file manager there is no terminal: the window opens on the connect screen instead.
        if let Err(error) = studio.file_open(file).await {
            tracing::warn!(code = %error.code, "could not open {}: {}", file.display(), error.message);
        }
    } else if let Some(url) = &args.store {
        studio
            .connection_open(ConnectionOpen { url: Some(url.clone()), profile: None, password: None, read_only: None })
            .await?;
    }
    if args.demo_traffic {
        studio.demo_traffic(a2_studio_api::DemoTraffic { on: Some(true) }).await?;
    }
    Ok(())
}

fn serve(studio: Arc<Studio>, port: u16) -> Result<(), String> {
    tauri::async_runtime::block_on(async move {
        let listener = web::bind(port).await.map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
        let token = web::new_token();
        println!("A2 Studio is serving on {}", web::url(&listener, &token).map_err(|e| e.to_string())?);
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        web::run(listener, studio, Arc::new(Embedded(context())), token, shutdown).await.map_err(|e| e.to_string())
    })
}

fn window(studio: Arc<Studio>) -> Result<(), String> {
    if std::env::var_os("DISPLAY").is_none()
        && std::env::var_os("WAYLAND_DISPLAY").is_none()
        && cfg!(target_os = "linux")
    {
        return Err("no display to open a window on (DISPLAY is unset): run `a2 serve` or `a2-studio --serve` \
                    and open the printed URL in a browser"
            .into());
    }
    let builder = commands::builder();
    tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .manage(studio)
        .invoke_handler(builder.invoke_handler())
        .run(context())
        .map_err(|e| format!("the window failed: {e}"))
}
