{{/*
The SubjectAccessReview resource attributes of the LLMInferenceService a
request's path names: /<namespace>/<name>/..., the path of every managed
route. Authorino evaluates the expressions (CEL) on each request. Call with
the verb: include "odh-serving.pathServiceAttributes" "get".
*/}}
{{- define "odh-serving.pathServiceAttributes" -}}
group:
  value: serving.kserve.io
resource:
  value: llminferenceservices
namespace:
  expression: request.path.split("/")[1]
name:
  expression: request.path.split("/")[2]
verb:
  value: {{ . }}
{{- end -}}

{{/*
A gateway's AuthPolicy (docs/auth.md): every request needs a bearer token
that a TokenReview accepts for .audiences, and whose user, with its groups,
may get the service the path names. A service's own AuthPolicy on its
route (the controller's anonymous one) replaces it for that route: these
rules are the gateway's implicit defaults. Call with a dict: root (the
chart's context), name and namespace (the Gateway's), audiences.
*/}}
{{- define "odh-serving.gatewayAuthPolicy" -}}
apiVersion: kuadrant.io/v1
kind: AuthPolicy
metadata:
  name: {{ .name }}-authn
  namespace: {{ .namespace }}
  labels:
    {{- include "odh-serving.labels" .root | nindent 4 }}
    app.kubernetes.io/component: auth
  annotations:
    {{- include "odh-serving.policyWave" . | nindent 4 }}
spec:
  targetRef:
    group: gateway.networking.k8s.io
    kind: Gateway
    name: {{ .name }}
  rules:
    authentication:
      kubernetes-user:
        credentials:
          authorizationHeader:
            prefix: Bearer
        kubernetesTokenReview:
          audiences:
          {{- toYaml .audiences | nindent 10 }}
    authorization:
      inference-access:
        kubernetesSubjectAccessReview:
          user:
            expression: auth.identity.user.username
          authorizationGroups:
            expression: auth.identity.user.groups
          resourceAttributes:
            {{- include "odh-serving.pathServiceAttributes" "get" | nindent 12 }}
{{- end -}}

{{/*
The sync wave of Kuadrant's policies: Argo CD applies them before anything
else of the release (wave 0, the services 1), so without Kuadrant's CRDs
that wave fails and the sync stops before a route could be served
unchecked (docs/auth.md). Helm ignores it.
*/}}
{{- define "odh-serving.policyWave" -}}
argocd.argoproj.io/sync-wave: "-1"
{{- end -}}
