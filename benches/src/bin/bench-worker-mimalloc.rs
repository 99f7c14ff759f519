//! `bench-worker` with mimalloc as the global allocator, for the pipeline scenario's
//! second row: how far the allocator, not the library, sets the ceiling.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    informer_benches::worker::main()
}
