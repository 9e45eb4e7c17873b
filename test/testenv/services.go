package testenv

// PrefillDecodeService is the YAML of the service the scale tests and
// benchmarks create (named pd): the CPU simulator's prefill/decode preset
// with a managed route, gateway and scheduler, 15 children and a
// serving-certificate secret.
const PrefillDecodeService = `
metadata:
  name: pd
spec:
  model:
    name: Qwen/Qwen2.5-0.5B-Instruct
  replicas: 1
  prefill:
    replicas: 2
  baseRefs:
  - name: kserve-config-llm-pd-cpu-simulator
  router:
    route: {}
    gateway: {}
    scheduler: {}
`
