// Package overlay applies a kustomize overlay to a stream of Kubernetes
// objects, such as the output of helm template or of odh-serving
// post-render, with the kustomize API on an in-memory filesystem: nothing
// is written to disk and no kustomize binary is needed.
//
// An overlay is a folder with a kustomization.yaml, either one built into
// the binary (the folders under overlays/, by name: odh, openshift,
// kubernetes) or a folder on disk. Its files are copied into memory, the
// stream becomes a resource file beside them, and kustomize builds:
//
//   - an overlay of kind Component (kustomize.config.k8s.io/v1alpha1) is
//     applied over the stream, so it can patch anything in it and add
//     objects; this is how the built-in overlays are written;
//   - an overlay of kind Kustomization lists the stream among its own
//     resources as helm-output.yaml (the usual Helm post-renderer layout).
//
// The build keeps the stream's order (kustomize's fifo sort order), loads
// files only from inside the overlay and runs no plugins or exec
// functions, so the same stream and overlay give the same bytes. Errors
// name the overlay and, where kustomize or YAML parsing says, the file.
package overlay
