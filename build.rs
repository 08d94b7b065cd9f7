//! Link settings of the `pld` binary (the library, the examples, the tests and the Python
//! extension are untouched).
//!
//! On Linux with glibc, `pld` is linked as a position-dependent executable (`-no-pie`): a
//! position-independent one is loaded at a random address and the dynamic loader must first
//! patch its 12,450 relative relocations (the pointers in its tables, trait objects and
//! string literals), about a fifth of a `pld --version` run. A `pld` run is short (a few
//! milliseconds for most queries), so that start-up is part of every answer.
//!
//! Measured on the 2-vCPU test machine: `perf stat -r 80 pld --version`, 1.08–1.66 ms of CPU
//! and 1.9–2.2 ms elapsed before, 1.17–1.26 ms and 1.5–1.8 ms after;
//! `python3 scripts/ab_timing.py 81 <before> <after> epsilon --sigma 1 --sampling-rate 0.01
//! --steps 1000 --delta 1e-5`, B/A 0.953 (medians 6.86 and 6.54 ms), and with `--sigma 0.8
//! --sampling-rate 0.004 --steps 100000`, 0.972 (11.68 and 11.36 ms).
//!
//! What it gives up: the executable's own code and data sit at a fixed address (shared
//! libraries, heap, stack and mappings are still randomized). `pld` reads numbers and a
//! specification file and writes numbers; it holds no secrets and serves no one.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bin=pld=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
