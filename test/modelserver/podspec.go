package modelserver

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Model is what a pod serves, read from its containers' command lines.
type Model struct {
	// Names are the served model names, the first one the base model's.
	Names []string
	// Adapters are the LoRA adapters' names.
	Adapters []string
	// MaxLoRAs is --max-loras (vLLM's default 1), reported in
	// vllm:lora_requests_info.
	MaxLoRAs int
}

// Serves says whether name is a served model name or adapter.
func (m Model) Serves(name string) bool {
	for _, n := range m.Names {
		if n == name {
			return true
		}
	}
	for _, a := range m.Adapters {
		if a == name {
			return true
		}
	}
	return false
}

// IsAdapter says whether name is one of the LoRA adapters.
func (m Model) IsAdapter(name string) bool {
	for _, a := range m.Adapters {
		if a == name {
			return true
		}
	}
	return false
}

// Port is one port a pod listens on.
type Port struct {
	Container string
	Number    int32
	// CertFile and KeyFile are where the container reads its serving
	// certificate; empty for plain HTTP.
	CertFile, KeyFile string
}

// TLS says whether the port serves TLS.
func (p Port) TLS() bool { return p.CertFile != "" }

// readPod reads what the pod serves and where: the model from the first
// container that names one (--served-model-name, else --model), and every
// TCP port of its containers with whether it serves TLS.
func readPod(pod *corev1.Pod) (Model, []Port, error) {
	m := Model{MaxLoRAs: 1}
	found := false
	var ports []Port
	// Sidecars (init containers that keep running, as llm-d's routing
	// sidecar) first, then the containers.
	var containers []corev1.Container
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			containers = append(containers, c)
		}
	}
	containers = append(containers, pod.Spec.Containers...)
	for _, c := range containers {
		words := commandWords(c)
		if !found {
			if names := flagValues(words, "--served-model-name"); len(names) > 0 {
				m.Names, found = names, true
			} else if names := flagValues(words, "--model"); len(names) > 0 {
				m.Names, found = names[:1], true
			} else if len(words) >= 3 && words[0] == "vllm" && words[1] == "serve" {
				m.Names, found = []string{words[2]}, true
			}
			if found {
				for _, spec := range flagValues(words, "--lora-modules") {
					name, err := loraName(spec)
					if err != nil {
						return Model{}, nil, fmt.Errorf("pod %s/%s, container %s: --lora-modules %q: %w", pod.Namespace, pod.Name, c.Name, spec, err)
					}
					m.Adapters = append(m.Adapters, name)
				}
				if v := flagValues(words, "--max-loras"); len(v) > 0 {
					if _, err := fmt.Sscan(v[0], &m.MaxLoRAs); err != nil {
						return Model{}, nil, fmt.Errorf("pod %s/%s, container %s: --max-loras %q: %w", pod.Namespace, pod.Name, c.Name, v[0], err)
					}
				}
			}
		}
		certFile, keyFile := certPaths(words)
		for _, p := range c.Ports {
			if p.Protocol != "" && p.Protocol != corev1.ProtocolTCP {
				continue
			}
			port := Port{Container: c.Name, Number: p.ContainerPort}
			if certFile != "" {
				port.CertFile, port.KeyFile = certFile, keyFile
			} else if p.Name == "https" || probeScheme(c, p.ContainerPort) == corev1.URISchemeHTTPS {
				// A TLS port whose container reads its certificate from a
				// place we do not know: the usual mount.
				port.CertFile, port.KeyFile = "/var/run/kserve/tls/tls.crt", "/var/run/kserve/tls/tls.key"
			}
			ports = append(ports, port)
		}
	}
	if !found {
		return Model{}, nil, fmt.Errorf("pod %s/%s: no container names a model (--served-model-name or --model)", pod.Namespace, pod.Name)
	}
	return m, ports, nil
}

// certPaths are the certificate and key a container serves with:
// --ssl-certfile/--ssl-keyfile (vLLM and llm-d's simulator) or the files
// tls.crt and tls.key in --cert-path (llm-d's routing sidecar).
func certPaths(words []string) (certFile, keyFile string) {
	if v := flagValues(words, "--ssl-certfile"); len(v) > 0 {
		certFile = v[0]
		if k := flagValues(words, "--ssl-keyfile"); len(k) > 0 {
			keyFile = k[0]
		}
		return certFile, keyFile
	}
	if v := flagValues(words, "--cert-path"); len(v) > 0 && (len(flagValues(words, "--secure-proxy")) == 0 || flagValues(words, "--secure-proxy")[0] == "true") {
		return path.Join(v[0], "tls.crt"), path.Join(v[0], "tls.key")
	}
	return "", ""
}

func probeScheme(c corev1.Container, port int32) corev1.URIScheme {
	for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
		if p != nil && p.HTTPGet != nil && p.HTTPGet.Port.IntVal == port {
			return p.HTTPGet.Scheme
		}
	}
	return ""
}

// loraName is the adapter's name in one --lora-modules value: name=path or
// vLLM's JSON form {"name": ..., "path": ...}.
func loraName(spec string) (string, error) {
	if strings.HasPrefix(strings.TrimSpace(spec), "{") {
		var v struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal([]byte(spec), &v); err != nil {
			return "", err
		}
		if v.Name == "" {
			return "", fmt.Errorf("no name")
		}
		return v.Name, nil
	}
	name, _, ok := strings.Cut(spec, "=")
	if !ok || name == "" {
		return "", fmt.Errorf("want name=path or JSON")
	}
	return name, nil
}

// commandWords is a container's command and args as words; a shell
// script (sh -c or bash -c) is split into its words as the shell would, so
// `exec vllm serve ... "$@"` is read too.
func commandWords(c corev1.Container) []string {
	all := append(append([]string{}, c.Command...), c.Args...)
	var out []string
	for i := 0; i < len(all); i++ {
		w := all[i]
		if (strings.HasSuffix(w, "/sh") || strings.HasSuffix(w, "/bash") || w == "sh" || w == "bash") && i+2 < len(all) && all[i+1] == "-c" {
			out = append(out, shellWords(all[i+2])...)
			i += 2
			if i+1 < len(all) {
				// $0 of the script; the rest are its "$@".
				i++
			}
			continue
		}
		out = append(out, w)
	}
	// exec is the shell's.
	if len(out) > 0 && out[0] == "exec" {
		out = out[1:]
	}
	return out
}

// shellWords splits a script into words: quotes group, backslash-newline
// joins lines, variables are left as they are.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '\\' && i+1 < len(s) && s[i+1] == '\n':
			i++
		case ch == '\\' && i+1 < len(s):
			cur.WriteByte(s[i+1])
			inWord = true
			i++
		case ch == '\'' || ch == '"':
			end := strings.IndexByte(s[i+1:], ch)
			if end < 0 {
				end = len(s) - i - 1
			}
			cur.WriteString(s[i+1 : i+1+end])
			inWord = true
			i += end + 1
		case ch == ' ' || ch == '\t' || ch == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// flagValues are the values of a flag among words: --flag=v, or the words
// after --flag up to the next one that starts with "-". Every occurrence
// counts.
func flagValues(words []string, flag string) []string {
	var out []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		if v, ok := strings.CutPrefix(w, flag+"="); ok {
			out = append(out, v)
			continue
		}
		if w != flag {
			continue
		}
		for i+1 < len(words) && !strings.HasPrefix(words[i+1], "-") {
			out = append(out, words[i+1])
			i++
		}
	}
	return out
}
