// assay: {"entry": "k",
// assay: "launch": {"grid": [1], "block": [32]}}
extern "C" __global__ void k() {}
