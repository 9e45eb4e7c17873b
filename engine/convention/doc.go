// Package convention holds what the parts of odh-serving must write the
// same way: the render engine, the controller, the command line and the
// certificate and CRD writers. Each name here is on the cluster, in a flag
// or in the chart, so it is defined once:
//   - the field managers of server-side apply;
//   - the managed-by label and the labels and annotations of children;
//   - the default gateway names;
//   - the InferencePool migration phases (Phase) and where serving
//     certificates come from (CertMode).
//
// It imports nothing from the project, so every package can use it.
package convention
