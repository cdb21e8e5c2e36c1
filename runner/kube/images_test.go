package kube

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The image a container ran is held to the local engine's build: by its ID
// when the node has it by no registry digest (loaded), by the pushed digest
// when it names the pushed repository; the runtime's other names of the
// same bytes are not compared.
func TestCheckImageID(t *testing.T) {
	const (
		id     = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
		other  = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
		pushed = "127.0.0.1:5000/sg/sandbox@" + other
	)
	for _, tc := range []struct {
		name    string
		want    imageWant
		imageID string
		err     string
	}{
		{"loaded, the engine's build", imageWant{id: id}, id, ""},
		{"loaded, another build", imageWant{id: id}, other, "load it again (.ci/kube-load"},
		{"loaded, known by a digest", imageWant{id: id}, "docker.io/skillgate/sandbox@" + other, ""},
		{"pulled, the pushed digest", imageWant{id: id, ref: pushed}, pushed, ""},
		{"pulled, another digest of the repository", imageWant{id: id, ref: pushed}, "127.0.0.1:5000/sg/sandbox@" + strings.Replace(other, "2", "3", -1), "the pushed one is " + pushed},
		{"pulled, another build by ID", imageWant{id: id, ref: pushed}, other, "push it again (skillgate image push)"},
		{"nothing to compare", imageWant{}, other, ""},
		{"not reported yet", imageWant{id: id}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{
				InitContainerStatuses: []corev1.ContainerStatus{{Name: seedContainer, Image: "img", ImageID: tc.imageID}},
			}}
			err := checkImageID(p, seedContainer, true, tc.want)
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("err = %v; want none", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("err = %v; want one saying %q", err, tc.err)
			}
		})
	}
}
