//! Project tasks: `cargo xtask test`, `cargo xtask bench`, `cargo xtask bench-build`,
//! `cargo xtask sass`.

mod sass;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const USAGE: &str = "usage: cargo xtask <task> [args]

tasks:
  test [cargo test args]   set up lavapipe if no Vulkan driver is visible, run every test
                           of the workspace, then a quick benchmark as a smoke test
  bench [bench args]       run the benchmark (cargo xtask bench -- --help for its options)
  bench-build DIR          build the benchmark and the idle probe in release mode and copy
                           their binaries into DIR
                           (to run it on another machine, e.g. the lent GPU)
  ";

fn main() -> ExitCode {
    let usage = format!("{USAGE}{}", sass::USAGE);
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("test") => test(&args[1..]),
        Some("bench") => bench(&args[1..]),
        Some("bench-build") => match args.get(1) {
            Some(dir) => bench_build(Path::new(dir)),
            None => Err("bench-build needs a destination folder".into()),
        },
        Some("sass") => sass::run(&args[1..]),
        _ => Err(usage),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

fn test(args: &[String]) -> Result<(), String> {
    ensure_vulkan_driver()?;
    quiet_mesa();
    run(cargo().args(["test", "--workspace"]).args(args))?;
    // The benchmark is the project's main job: make sure it still runs end to end.
    run(cargo().args(["bench", "-p", "wgsparse", "--bench", "bench", "--", "--quick"]))
}

fn bench(args: &[String]) -> Result<(), String> {
    quiet_mesa();
    let args: Vec<&String> = args.iter().skip_while(|a| *a == "--").collect();
    run(cargo().args(["bench", "-p", "wgsparse", "--bench", "bench", "--"]).args(args))
}

/// Builds the bench binaries and copies them to `dir/wgsparse-bench` (the benchmark) and
/// `dir/wgsparse-idle` (the idle probe, benches/idle.rs).
fn bench_build(dir: &Path) -> Result<(), String> {
    let output = cargo()
        .args(["bench", "-p", "wgsparse", "--bench", "bench", "--bench", "idle", "--no-run"])
        .arg("--message-format=json-render-diagnostics")
        .output()
        .map_err(|e| format!("cargo: {e}"))?;
    if !output.status.success() {
        return Err(format!("building the benchmark failed:\n{}", String::from_utf8_lossy(&output.stderr)));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    for (target, binary) in [("bench", "wgsparse-bench"), ("idle", "wgsparse-idle")] {
        // The last compiler-artifact line naming an executable for the target is its binary.
        let executable = stdout
            .lines()
            .filter(|l| l.contains("\"reason\":\"compiler-artifact\"") && l.contains(&format!("\"name\":\"{target}\"")))
            .filter_map(|l| json_string_field(l, "executable"))
            .next_back()
            .ok_or(format!("cargo did not report the {target} executable"))?;
        let dest = dir.join(binary);
        std::fs::copy(&executable, &dest).map_err(|e| format!("copying {executable}: {e}"))?;
        println!("{}", dest.display());
    }
    Ok(())
}

/// The value of `"field":"..."` in one line of cargo's JSON output (no escapes in paths).
fn json_string_field(line: &str, field: &str) -> Option<String> {
    let start = line.find(&format!("\"{field}\":\""))? + field.len() + 4;
    let end = start + line[start..].find('"')?;
    Some(line[start..end].to_string())
}

/// Installs lavapipe (`mesa-vulkan-drivers`) when no Vulkan driver is visible and the
/// machine is Debian or Ubuntu and we are root; otherwise says what is missing.
fn ensure_vulkan_driver() -> Result<(), String> {
    if vulkan_driver_visible() {
        return Ok(());
    }
    let debian = Path::new("/etc/debian_version").exists();
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !(debian && root) {
        eprintln!(
            "xtask: no Vulkan driver found; install one (Debian/Ubuntu: apt-get install mesa-vulkan-drivers) \
             — the GPU tests will fail without it"
        );
        return Ok(());
    }
    eprintln!("xtask: no Vulkan driver found: installing lavapipe (mesa-vulkan-drivers)");
    let apt = || {
        let mut c = Command::new("apt-get");
        c.env("DEBIAN_FRONTEND", "noninteractive");
        c
    };
    run(apt().args(["update", "-q"]))?;
    run(apt().args(["install", "-y", "-q", "--no-install-recommends", "mesa-vulkan-drivers"]))?;
    if !vulkan_driver_visible() {
        return Err("mesa-vulkan-drivers was installed but no Vulkan driver is visible".into());
    }
    Ok(())
}

/// A Vulkan loader plus at least one installable client driver manifest.
fn vulkan_driver_visible() -> bool {
    let loader =
        ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"]
            .iter()
            .any(|d| Path::new(d).join("libvulkan.so.1").exists());
    let from_env = ["VK_DRIVER_FILES", "VK_ICD_FILENAMES"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .any(|list| list.split(':').any(|f| Path::new(f).exists()));
    let manifests = ["/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d", "/usr/local/share/vulkan/icd.d"]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .any(|e| e.is_ok_and(|e| e.path().extension().is_some_and(|x| x == "json")));
    loader && (from_env || manifests)
}

/// Mesa's software drivers complain on every start when XDG_RUNTIME_DIR is unset.
fn quiet_mesa() {
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        let dir = std::env::temp_dir().join("wgsparse-xdg-runtime");
        if std::fs::create_dir_all(&dir).is_ok() {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
            }
            std::env::set_var("XDG_RUNTIME_DIR", dir);
        }
    }
}

fn cargo() -> Command {
    let mut c = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    c.current_dir(workspace_root());
    c
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

fn run(command: &mut Command) -> Result<(), String> {
    let status = command.status().map_err(|e| format!("{command:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{command:?} failed ({status})"))
    }
}
