//! The `rustberg` command.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use rustberg::config::Config;

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
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Serve { config } => {
            let config = match config {
                Some(path) => Config::load(&path)?,
                None => Config::default(),
            };
            rustberg::server::serve(config).await
        }
        Command::HashSecret => {
            let mut secret = String::new();
            std::io::stdin().read_line(&mut secret)?;
            println!("{}", rustberg::auth::hash_secret(secret.trim_end_matches(['\r', '\n'])));
            Ok(())
        }
    }
}
