package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of edge-mc.
const GroupName = "edge.kcp.io"

// SchemeGroupVersion is the group and version of this package.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

var (
	// SchemeBuilder collects the functions that add this package's types to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Resource returns the GroupResource of the given resource of this group.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&Location{}, &LocationList{},
		&SyncTarget{}, &SyncTargetList{},
		&EdgePlacement{}, &EdgePlacementList{},
		&SinglePlacementSlice{}, &SinglePlacementSliceList{},
		&Customizer{}, &CustomizerList{},
		&SyncerConfig{}, &SyncerConfigList{},
		&Assemblage{}, &AssemblageList{},
		&AssemblagePart{}, &AssemblagePartList{},
		&StatusCollector{}, &StatusCollectorList{},
		&HealthRule{}, &HealthRuleList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
