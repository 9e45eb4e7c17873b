// Package modelserver is test tooling: a model-server simulator that stands
// in for vLLM behind every pod of a local cluster whose pods never run a
// container (kwok nodes give them loopback IPs, 127.x.y.z). It replaces
// nothing in the product: the CPU simulator presets keep naming their real
// image (llm-d's inference simulator), which cannot run here.
//
// A Fleet follows pods (Run watches them with an informer; tests feed pod
// objects to Apply and Remove). For each Running pod with an IP it listens
// at the pod's IP and at each TCP port its containers declare, bound on the
// loopback interface (on Linux every 127.0.0.0/8 address is local, so no
// setup is needed), and stops when the pod stops running or goes away. Each
// pod's server answers:
//
//   - POST /v1/completions and /v1/chat/completions, streamed as
//     server-sent events when the request says "stream": true. The model
//     must be one the pod serves (404 otherwise, as vLLM answers); the text
//     and the X-Model-Server-Pod header name the pod; every answer's
//     X-Model-Server-Address header is the ip:port it arrived at;
//   - GET /v1/models: the names from the pod's --served-model-name
//     (including KServe's publishers/<namespace>/models/<name> alias) and
//     its --lora-modules adapters, with the base model as their parent;
//   - GET /health;
//   - GET /metrics: vLLM's Prometheus metrics that endpoint pickers read
//     (vllm:num_requests_waiting, vllm:num_requests_running,
//     vllm:kv_cache_usage_perc, vllm:lora_requests_info with its
//     running_lora_adapters, waiting_lora_adapters and max_lora labels, and
//     vllm:cache_config_info), whose counts move with the requests in
//     flight: each takes Options.ResponseTime, and at most
//     Options.MaxRunning run at once; the others wait.
//
// Each pod's server records the requests it received, headers and all
// (Fleet.Received, Fleet.ReceivedWith, the last 256 per pod), so that a
// test can check what reached the pod: a caller's credentials must not.
//
// A port serves TLS when the pod's container does (its --ssl-certfile, or a
// --cert-path folder, or an HTTPS probe or port name), with the certificate
// and key of the Secret the pod mounts at that path, read from the API
// server as the kubelet would.
//
// engine/, internal/ and cmd/ never import this package.
package modelserver
