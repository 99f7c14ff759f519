//! One measured run of a benchmark scenario; see [`informer_benches::worker`].

fn main() -> anyhow::Result<()> {
    informer_benches::worker::main()
}
