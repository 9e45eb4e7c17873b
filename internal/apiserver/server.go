package apiserver

import (
	"context"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	modelv1alpha1 "github.com/opendatahub-io/odh-serving/api/modelserving/v1alpha1"
	generatedopenapi "github.com/opendatahub-io/odh-serving/internal/apiserver/openapi"
)

// serverName names the generic server in its logs and metrics.
const serverName = "odh-serving-api-server"

// Run serves the API until ctx is done. o must be Completed; Run
// validates it.
func Run(ctx context.Context, o *Options) error {
	if err := o.Validate(); err != nil {
		return fmt.Errorf("api-server flags: %w", err)
	}
	cfg, err := clusterConfig(o.Kubeconfig)
	if err != nil {
		return err
	}
	registerMetrics()
	cfg.Wrap(countRequests)
	o.Authentication.CustomRoundTripperFn = countRequests
	o.Authorization.CustomRoundTripperFn = countRequests

	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	tiers, err := newTierSource(kube, o)
	if err != nil {
		return err
	}
	models, err := newModelCache(cfg, tiers)
	if err != nil {
		return err
	}
	scheme, codecs, err := newScheme()
	if err != nil {
		return err
	}
	bearer, err := newBearerAuthenticator(kube, o)
	if err != nil {
		return err
	}
	server, err := newGenericServer(o, scheme, codecs, bearer)
	if err != nil {
		return err
	}
	group := genericapiserver.NewDefaultAPIGroupInfo(modelv1alpha1.GroupName, scheme, metav1.ParameterCodec, codecs)
	minter := newMinter(kube, tiers, o)
	modelList := &modelStorage{cache: models, tiers: tiers}
	group.VersionedResourcesStorageMap[modelv1alpha1.GroupVersion.Version] = map[string]rest.Storage{
		"models":           modelList,
		"tierreviews":      newQuery(tiers.review),
		"tokenrequests":    newQuery(minter.request),
		"tokenrevocations": newQuery(minter.revoke),
	}
	if err := server.InstallAPIGroup(&group); err != nil {
		return fmt.Errorf("install %s: %w", modelv1alpha1.GroupVersion, err)
	}
	endpoints := &openAI{models: modelList, minter: minter}
	server.Handler.NonGoRestfulMux.Handle(PathModels, endpoints)
	server.Handler.NonGoRestfulMux.Handle(PathTokens, endpoints)
	if err := server.AddReadyzChecks(tiers.syncedCheck(), models.syncedCheck()); err != nil {
		return fmt.Errorf("readiness checks: %w", err)
	}
	go tiers.run(ctx)
	go models.run(ctx)
	return server.PrepareRun().RunWithContext(ctx)
}

// clusterConfig reads a kubeconfig file, or finds one as kubectl does
// (in-cluster, $KUBECONFIG, ~/.kube/config).
func clusterConfig(kubeconfig string) (*restclient.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.UserAgent = serverName
	return cfg, nil
}

// newGenericServer configures k8s.io/apiserver's generic server: secure
// serving, delegated authentication and authorization, OpenAPI. There is
// no etcd, no admission and no priority and fairness. The REST endpoints
// (PathModels, PathTokens) are authenticated by bearer alone and
// authorized as the API requests they stand for (openai.go).
func newGenericServer(o *Options, scheme *runtime.Scheme, codecs serializer.CodecFactory, bearer authenticator.Request) (*genericapiserver.GenericAPIServer, error) {
	if err := o.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, nil); err != nil {
		return nil, fmt.Errorf("self-signed serving certificate: %w", err)
	}
	c := genericapiserver.NewConfig(codecs)
	c.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	namer := openapi.NewDefinitionNamer(scheme)
	c.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(generatedopenapi.GetOpenAPIDefinitions, namer)
	c.OpenAPIConfig.Info.Title = "odh-serving"
	c.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(generatedopenapi.GetOpenAPIDefinitions, namer)
	c.OpenAPIV3Config.Info.Title = "odh-serving"
	if err := o.SecureServing.ApplyTo(&c.SecureServing, &c.LoopbackClientConfig); err != nil {
		return nil, fmt.Errorf("secure serving: %w", err)
	}
	if err := o.Authentication.ApplyTo(&c.Authentication, c.SecureServing, c.OpenAPIConfig); err != nil {
		return nil, fmt.Errorf("delegated authentication: %w", err)
	}
	if err := o.Authorization.ApplyTo(&c.Authorization); err != nil {
		return nil, fmt.Errorf("delegated authorization: %w", err)
	}
	c.BuildHandlerChainFunc = func(h http.Handler, c *genericapiserver.Config) http.Handler {
		return dropImpersonation(genericapiserver.DefaultBuildHandlerChain(h, c))
	}
	completed := c.Complete(nil)
	// After Complete, which adds the loopback client's token to both: the
	// REST endpoints take no loopback identity either.
	c.Authentication.Authenticator = openAIAuthenticator{generic: c.Authentication.Authenticator, bearer: bearer}
	c.Authorization.Authorizer = openAIAuthorizer{c.Authorization.Authorizer}
	server, err := completed.New(serverName, genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, fmt.Errorf("generic API server: %w", err)
	}
	return server, nil
}
