// What the benchmarks' Go peers (benches/client-go, benches/controller-runtime) share:
// failing with a message, the versions they were built with, CPU and memory readings.
// Each peer requires it through a replace to this folder.
module informer.local/gopeer

go 1.26.0
