//! The `rustberg` command.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use rustberg::config::{Config, LogFormat};

/// glibc's malloc kept 40–48 MB resident after load (an arena per worker thread);
/// mimalloc, as set below, 24-27 (docs/performance.md, "Issue 60's walk").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "rustberg", version, about = "An Apache Iceberg REST catalog server")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the catalog (with no config: 127.0.0.1:8181, state under ./rustberg-data).
    Serve {
        /// A TOML configuration file (see docs/configuration.md).
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Print the argon2 hash of a client secret (for `secret_hash` in the config), read from stdin.
    HashSecret,
    /// Check a configuration file as `serve` would (stores reachable, components compiled
    /// and their imports granted) without serving. Exit status 1 with the problems listed.
    CheckConfig {
        /// The TOML configuration file.
        file: PathBuf,
    },
    /// Manage the server while it is stopped.
    #[command(subcommand)]
    Admin(AdminCommand),
    /// Write, inspect and test components: backends, gates, sinks (see docs/plugins.md).
    #[command(subcommand)]
    Plugin(PluginCommand),
}

#[derive(Subcommand)]
enum AdminCommand {
    /// Replace the credential of the admin the server minted (no server admin is
    /// configured): prints the new one and writes it to <data_dir>/admin-credential.
    /// Tokens issued to the old one stop working.
    ResetCredential {
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum PluginCommand {
    /// Print a component's contract version, world, imports and exports, and whether a
    /// mount's grants would accept it. Exit status 1 when something is refused.
    Check {
        /// A `.wasm` component, or a built-in backend's name.
        component: String,
        /// The configuration holding the mount (and the component cache location).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Judge the component by this mount's grants.
        #[arg(long, requires = "config")]
        mount: Option<String>,
    },
    /// Write a ready-to-build backend, gate or sink project into the directory NAME.
    New {
        name: String,
        #[arg(long, value_enum)]
        lang: rustberg::authoring::scaffold::Lang,
        /// What the component is: a catalog backend, an admission gate or an event sink.
        #[arg(long, value_enum, default_value = "backend")]
        kind: rustberg::authoring::scaffold::Kind,
    },
    /// Run the backend conformance suite against a component, in-process, or a gate's
    /// or a sink's cases. Exit status 1 when a case fails.
    Test {
        /// A `.wasm` component, or a built-in backend's name.
        component: String,
        /// A configuration (limits, cache; with --mount, the mount to test against).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Test against this mount's store or remote instead of an ephemeral key space
        /// (needed for an http backend).
        #[arg(long, requires = "config")]
        mount: Option<String>,
    },
}

fn load_config(path: Option<PathBuf>) -> anyhow::Result<Config> {
    Ok(match path {
        Some(path) => Config::load(&path)?,
        None => Config::default(),
    })
}

async fn plugin(command: PluginCommand) -> anyhow::Result<()> {
    use rustberg::authoring::{check, conformance, hook_test, scaffold};
    let mut out = std::io::stdout();
    let passed = match command {
        PluginCommand::Check { component, config, mount } => {
            check::check(&component, &load_config(config)?, mount.as_deref(), &mut out).await?
        }
        PluginCommand::New { name, lang, kind } => {
            scaffold::new(&name, kind, lang, std::path::Path::new(&name))?;
            let built = match kind {
                scaffold::Kind::Backend => "backend",
                scaffold::Kind::Gate => "gate",
                scaffold::Kind::Sink => "sink",
            };
            println!("wrote {name}/: build it with {name}/build.sh, then `rustberg plugin test {name}/{built}.wasm`");
            true
        }
        PluginCommand::Test { component, config, mount } => {
            let config = load_config(config)?;
            let target = match mount {
                Some(name) => {
                    let mount = config
                        .mounts
                        .get(&name)
                        .cloned()
                        .ok_or_else(|| anyhow::anyhow!("the configuration has no [mount.{name}]"))?;
                    conformance::Target::Mount { name, mount: Box::new(mount) }
                }
                None => conformance::Target::EphemeralKv,
            };
            let wasm = rustberg::sandbox::builtin::component(&component).map_err(|e| anyhow::anyhow!(e))?;
            match hook_test::run(&wasm, &config, &mut out).await? {
                Some(passed) => passed,
                None => conformance::run(wasm, target, &config, &mut out).await?,
            }
        }
    };
    if !passed {
        std::process::exit(1);
    }
    Ok(())
}

/// mimalloc 3's `mi_option_purge_delay` (its header's `mi_option_e`; libmimalloc-sys
/// 0.1.49 has no name for it).
const MI_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Memory comes back to the system as soon as it is free, in small pages. Measured
/// (docs/performance.md): with mimalloc's defaults what start-up freed (loading the
/// components) stayed resident, and transparent huge pages, where the kernel applies
/// them to every mapping (`always`, as on this project's machines), made each touch
/// of its reserved memory 2 MiB resident: 63 MB after start; so set, 24–25 MB.
fn return_memory_promptly() {
    // SAFETY: an option set and a prctl with integer arguments; both only change how
    // later allocations and page faults are served.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_PURGE_DELAY, 0);
        #[cfg(target_os = "linux")]
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

fn main() -> anyhow::Result<()> {
    // Before the runtime's threads allocate anything.
    return_memory_promptly();
    tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(run(Cli::parse()))
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve { config } => {
            let config = load_config(config)?;
            rustberg::logs::init(config.log.format);
            rustberg::server::serve(config).await
        }
        Command::CheckConfig { file } => {
            rustberg::logs::init(LogFormat::Text);
            let problems = rustberg::preflight::check(&file).await;
            if problems.is_empty() {
                println!("{}: ok", file.display());
                return Ok(());
            }
            for problem in &problems {
                println!("{}: {problem}", file.display());
            }
            std::process::exit(1);
        }
        Command::Admin(AdminCommand::ResetCredential { config }) => {
            rustberg::logs::init(LogFormat::Text);
            let (secret, file) = rustberg::server::reset_admin_credential(&load_config(config)?).await?;
            println!("credential admin:{secret}");
            println!("(also written to {})", file.display());
            Ok(())
        }
        Command::Plugin(command) => {
            rustberg::logs::init(LogFormat::Text);
            plugin(command).await
        }
        Command::HashSecret => {
            rustberg::logs::init(LogFormat::Text);
            let mut secret = String::new();
            std::io::stdin().read_line(&mut secret)?;
            println!("{}", rustberg::auth::hash_secret(secret.trim_end_matches(['\r', '\n'])));
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The option's index is written by hand: a mimalloc that renumbered its options
    /// would have the index name another. The purge delay's default is 1,000 ms (in
    /// mimalloc 3; its header's comment still says 10).
    #[test]
    fn the_purge_delay_is_the_option_named() {
        // SAFETY: reading an option.
        assert_eq!(unsafe { libmimalloc_sys::mi_option_get(MI_PURGE_DELAY) }, 1000);
    }
}
