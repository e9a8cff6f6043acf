package framework

import (
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeTokenFile writes kcp's --token-auth-file for users, each with a random token, into dir,
// and returns its path and the tokens by user name. Its format is Kubernetes' static token
// file: token,user,uid,"group1,group2".
func writeTokenFile(dir string, users []User) (string, map[string]string, error) {
	tokens := map[string]string{}
	var b strings.Builder
	w := csv.NewWriter(&b)
	for _, u := range users {
		if u.Name == "" {
			return "", nil, fmt.Errorf("a user without a name")
		}
		if _, dup := tokens[u.Name]; dup {
			return "", nil, fmt.Errorf("user %s given twice", u.Name)
		}
		raw := make([]byte, 24)
		if _, err := rand.Read(raw); err != nil {
			return "", nil, err
		}
		tokens[u.Name] = hex.EncodeToString(raw)
		record := []string{tokens[u.Name], u.Name, "uid-" + u.Name}
		if len(u.Groups) > 0 {
			record = append(record, strings.Join(u.Groups, ","))
		}
		if err := w.Write(record); err != nil {
			return "", nil, err
		}
	}
	w.Flush()
	path := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return "", nil, err
	}
	return path, tokens, nil
}

// UserConfig returns a rest.Config that reaches the workspace at path as the user name, given to
// WithUsers, with the server's TLS settings and no other credential.
func (s *Server) UserConfig(t testing.TB, name string, path logicalcluster.Path) *rest.Config {
	t.Helper()
	token, ok := s.tokens[name]
	if !ok {
		t.Fatalf("kcp knows no user %s: start it with framework.WithUsers", name)
	}
	return &rest.Config{
		Host:            s.ServerURL(path),
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: s.Base.CAData, CAFile: s.Base.CAFile, Insecure: s.Base.Insecure, ServerName: s.Base.ServerName},
		QPS:             50, Burst: 100,
	}
}

// UserKubeconfig writes a kubeconfig, for kubectl, that reaches the workspace at path as the user
// name, and returns its path.
func (s *Server) UserKubeconfig(t testing.TB, name string, path logicalcluster.Path) string {
	t.Helper()
	cfg := s.UserConfig(t, name, path)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["kcp"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData,
		CertificateAuthority: cfg.CAFile, InsecureSkipTLSVerify: cfg.Insecure, TLSServerName: cfg.ServerName}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: "kcp", AuthInfo: name}
	kc.CurrentContext = name
	file := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, file); err != nil {
		t.Fatal(err)
	}
	return file
}
