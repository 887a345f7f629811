package protocol

// OpCheckpointPrepare asks the runner to close every connection and its
// listener, so that gVisor can checkpoint the sandbox's memory (it cannot
// save a socket bound to or connected through a host path). The runner
// answers with an empty result and then closes the connection the request
// came on: when the gateway sees that connection end, nothing of the
// runner's holds a host socket. The runner listens again on SIGUSR2
// (ReopenSignal), which the gateway sends after the restore or after a
// checkpoint that failed, or by itself after CheckpointReopenAfter.
const OpCheckpointPrepare Op = "checkpoint.prepare" // no params → empty result

// FeatureCheckpoint marks a runner that serves OpCheckpointPrepare.
const FeatureCheckpoint = "checkpoint"
