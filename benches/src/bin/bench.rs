//! The benchmark driver; see [`informer_benches::driver`].

fn main() -> anyhow::Result<()> {
    informer_benches::driver::main()
}
