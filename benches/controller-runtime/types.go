package main

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The Parent custom resource's group and version (benches/src/controller.rs).
var parentVersion = schema.GroupVersion{Group: "bench.informer.dev", Version: "v1"}

// A parent: its status shows what its child holds.
type Parent struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ParentSpec    `json:"spec"`
	Status            *ParentStatus `json:"status,omitempty"`
}

// ParentSpec names the child.
type ParentSpec struct {
	Child string `json:"child"`
}

// ParentStatus is what the controller last saw of the child.
type ParentStatus struct {
	// "{tag}:{value}" of the child's value.
	Observed *string `json:"observed,omitempty"`
}

// ParentList is a list of parents.
type ParentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Parent `json:"items"`
}

// Registers Parent and ParentList (what controller-gen's zz_generated files and
// AddToScheme do for a kubebuilder type, written by hand).
func addParentToScheme(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(parentVersion, &Parent{}, &ParentList{})
	metav1.AddToGroupVersion(scheme, parentVersion)
	return nil
}

// DeepCopyInto copies p into out.
func (p *Parent) DeepCopyInto(out *Parent) {
	*out = *p
	out.TypeMeta = p.TypeMeta
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = p.Spec
	if p.Status != nil {
		status := *p.Status
		if p.Status.Observed != nil {
			observed := *p.Status.Observed
			status.Observed = &observed
		}
		out.Status = &status
	}
}

// DeepCopyObject implements runtime.Object.
func (p *Parent) DeepCopyObject() runtime.Object {
	if p == nil {
		return nil
	}
	out := new(Parent)
	p.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (l *ParentList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := new(ParentList)
	out.TypeMeta = l.TypeMeta
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]Parent, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}
