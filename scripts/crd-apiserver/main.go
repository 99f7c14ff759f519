// Command crd-apiserver is Kubernetes' apiextensions-apiserver standing alone: the
// CustomResourceDefinition API and the custom resources it defines, on etcd, with no
// kube-apiserver beside it. It is the informer's modern test server (Kubernetes 1.36:
// streaming lists, WatchList, are on by default since 1.34); scripts/install-control-plane.sh
// builds it in GOPATH mode from Debian sid's golang-k8s-*-dev source packages.
//
// Upstream's own main (k8s.io/apiextensions-apiserver/main.go) is made to run as a
// delegate inside kube-apiserver, and alone it does not work for us: it turns discovery
// off (kube-apiserver's aggregator serves it there), its /readyz waits for a Services
// informer fed by a kube-apiserver, its default admission plugins (NamespaceLifecycle,
// the webhook and admission-policy plugins) answer every write with 403 "not yet ready"
// until their informers on a kube-apiserver sync, and API priority and fairness reads
// its configuration from one. This main builds the same server with:
//
//   - discovery on (/apis, /apis/<group>, /apis/<group>/<version>; the legacy /apis
//     APIGroupList also lists the groups of the established CRDs, which upstream leaves
//     to the aggregator) and OpenAPI v2 and v3 on;
//   - no --kubeconfig (no core API: no Namespaces, Services, Leases or RBAC; custom
//     resources can be created in any namespace), no admission plugins, no priority and
//     fairness (plain max-in-flight limits instead);
//   - authentication without a kube-apiserver: x509 client certificates (--client-ca-file)
//     and, as in kube-apiserver, a static token file (--token-auth-file,
//     "token,user,uid[,\"group1,group2\"]" lines); --authentication-kubeconfig and
//     --authorization-kubeconfig are optional and the in-cluster lookup is skipped;
//   - authorization by group only: system:masters may do everything, anyone may read
//     /healthz, /livez, /readyz and /version (as kube-apiserver's
//     system:public-info-viewer allows), everyone else is forbidden (no
//     SubjectAccessReview without --authorization-kubeconfig);
//   - --version, with the version set at link time
//     (-X k8s.io/component-base/version.gitVersion=v1.36.x and gitMajor/gitMinor).
//
// Every other flag is upstream's (etcd, serving, audit, feature gates, --watch-cache, ...).
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"sort"
	"sync"

	"github.com/spf13/cobra"
	noopoteltrace "go.opentelemetry.io/otel/trace/noop"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver"
	"k8s.io/apiextensions-apiserver/pkg/cmd/server/options"
	generatedopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authentication/token/tokenfile"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/openapi"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/version/verflag"
	netutils "k8s.io/utils/net"
)

func main() {
	o := options.NewCustomResourceDefinitionsServerOptions(os.Stdout, os.Stderr)
	// No kube-apiserver to lean on (see the package comment).
	o.RecommendedOptions.CoreAPI = nil
	o.RecommendedOptions.Admission = nil
	o.RecommendedOptions.Features.EnablePriorityAndFairness = false
	o.RecommendedOptions.Authentication.RemoteKubeConfigFileOptional = true
	o.RecommendedOptions.Authentication.SkipInClusterLookup = true
	o.RecommendedOptions.Authorization.RemoteKubeConfigFileOptional = true
	o.RecommendedOptions.Authorization.AlwaysAllowPaths = append(o.RecommendedOptions.Authorization.AlwaysAllowPaths, "/version", "/version/")
	var tokenAuthFile string

	cmd := &cobra.Command{
		Use:   "crd-apiserver",
		Short: "The apiextensions-apiserver (CustomResourceDefinitions) without a kube-apiserver",
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return o.ServerRunOptions.ComponentGlobalsRegistry.Set()
		},
		RunE: func(c *cobra.Command, _ []string) error {
			verflag.PrintAndExitIfRequested()
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return run(c.Context(), o, tokenAuthFile)
		},
		Args: cobra.NoArgs,
	}
	cmd.SetContext(genericapiserver.SetupSignalContext())
	fs := cmd.Flags()
	o.AddFlags(fs)
	fs.StringVar(&tokenAuthFile, "token-auth-file", "",
		"If set, the file that will be used to secure the secure port of the API server via token authentication "+
			"(kube-apiserver's format: token,user,uid[,\"group1,group2\"]).")
	verflag.AddFlags(fs)
	os.Exit(cli.Run(cmd))
}

func run(ctx context.Context, o *options.CustomResourceDefinitionsServerOptions, tokenAuthFile string) error {
	config, err := serverConfig(o, tokenAuthFile)
	if err != nil {
		return err
	}
	completed := config.Complete()
	// apiserver.Config.Complete turns discovery off; alone, this server is the one to serve it.
	completed.GenericConfig.EnableDiscovery = true
	server, err := completed.New(genericapiserver.NewEmptyDelegate())
	if err != nil {
		return err
	}
	listCRDGroups(server)
	return server.GenericAPIServer.PrepareRun().RunWithContext(ctx)
}

// serverConfig is upstream's options.Config without its Services informer (its only use,
// resolving conversion webhooks' service references, goes to <name>.<namespace>.svc
// instead), with OpenAPI v2 beside v3, and with the token file's authenticator.
func serverConfig(o *options.CustomResourceDefinitionsServerOptions, tokenAuthFile string) (*apiserver.Config, error) {
	if err := o.RecommendedOptions.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
		return nil, fmt.Errorf("error creating self-signed certificates: %v", err)
	}
	c := genericapiserver.NewRecommendedConfig(apiserver.Codecs)
	if err := o.ServerRunOptions.ApplyTo(&c.Config); err != nil {
		return nil, err
	}
	if err := o.RecommendedOptions.ApplyTo(c); err != nil {
		return nil, err
	}
	if err := o.APIEnablement.ApplyTo(&c.Config, apiserver.DefaultAPIResourceConfigSource(), apiserver.Scheme); err != nil {
		return nil, err
	}
	if tokenAuthFile != "" {
		tokens, err := tokenfile.NewCSV(tokenAuthFile)
		if err != nil {
			return nil, fmt.Errorf("--token-auth-file: %v", err)
		}
		// A known token authenticates its user (in system:authenticated too); an unknown one
		// is refused (401), not taken for anonymous; a request without one goes on to the
		// client certificate and then anonymous, as before.
		c.Authentication.Authenticator = union.NewFailOnError(
			group.NewAuthenticatedGroupAdder(bearertoken.New(tokens)),
			c.Authentication.Authenticator,
		)
	}
	definitions := openapi.GetOpenAPIDefinitionsWithoutDisabledFeatures(generatedopenapi.GetOpenAPIDefinitions)
	namer := openapinamer.NewDefinitionNamer(apiserver.Scheme, scheme.Scheme)
	c.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(definitions, namer)
	c.OpenAPIConfig.Info.Title = "Kubernetes"
	c.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(definitions, namer)
	c.OpenAPIV3Config.Info.Title = "Kubernetes"
	return &apiserver.Config{
		GenericConfig: c,
		ExtraConfig: apiserver.ExtraConfig{
			CRDRESTOptionsGetter: options.NewCRDRESTOptionsGetter(*o.RecommendedOptions.Etcd, c.ResourceTransformers, c.StorageObjectCountTracker),
			ServiceResolver:      webhook.NewDefaultServiceResolver(),
			AuthResolverWrapper:  webhook.NewDefaultAuthenticationInfoResolverWrapper(nil, nil, c.LoopbackClientConfig, noopoteltrace.NewTracerProvider()),
		},
	}, nil
}

// listCRDGroups keeps the legacy discovery document at /apis (an APIGroupList) listing
// every group that an established CRD serves a version of, with its versions in
// Kubernetes' priority order, the first preferred. Upstream serves /apis/<group> and the
// aggregated (v2) /apis for CRDs itself, but leaves the legacy list to kube-apiserver's
// aggregator.
func listCRDGroups(s *apiserver.CustomResourceDefinitions) {
	crds := s.Informers.Apiextensions().V1().CustomResourceDefinitions()
	lister := crds.Lister()
	groups := s.GenericAPIServer.DiscoveryGroupManager
	var mu sync.Mutex
	listed := map[string]bool{}
	resync := func() {
		mu.Lock()
		defer mu.Unlock()
		all, err := lister.List(labels.Everything())
		if err != nil {
			return
		}
		versions := map[string]map[string]bool{}
		for _, crd := range all {
			if !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
				continue
			}
			for _, v := range crd.Spec.Versions {
				if v.Served {
					if versions[crd.Spec.Group] == nil {
						versions[crd.Spec.Group] = map[string]bool{}
					}
					versions[crd.Spec.Group][v.Name] = true
				}
			}
		}
		// Sorted, so that the groups first appear in /apis in the same order every run.
		groupNames := make([]string, 0, len(versions))
		for name := range versions {
			groupNames = append(groupNames, name)
		}
		sort.Strings(groupNames)
		for _, name := range groupNames {
			served := versions[name]
			names := make([]string, 0, len(served))
			for v := range served {
				names = append(names, v)
			}
			sort.Slice(names, func(i, j int) bool {
				return version.CompareKubeAwareVersionStrings(names[i], names[j]) > 0
			})
			g := metav1.APIGroup{Name: name}
			for _, v := range names {
				g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: name + "/" + v, Version: v})
			}
			g.PreferredVersion = g.Versions[0]
			groups.AddGroup(g)
			listed[name] = true
		}
		for name := range listed {
			if versions[name] == nil {
				groups.RemoveGroup(name)
				delete(listed, name)
			}
		}
	}
	_, _ = crds.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { resync() },
		UpdateFunc: func(any, any) { resync() },
		DeleteFunc: func(any) { resync() },
	})
}
