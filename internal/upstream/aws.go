package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
)

// Signer signs each request an upstream is sent (a cloud's request
// signature); safe for concurrent use.
type Signer interface {
	// Credentials are what Sign signs with, fetched and refreshed by the
	// signer (bounded by ctx); an error makes the call an upstream
	// failure, nothing sent.
	Credentials(ctx context.Context) (any, error)
	// Sign signs req, whose body is body, with credentials.
	Sign(req *http.Request, body []byte, credentials any) error
}

// AWSService is the service name Amazon Bedrock's requests are signed for.
const AWSService = "bedrock"

// AWSSigner signs requests with AWS Signature Version 4 for Amazon Bedrock
// in region ("" for the region the environment or the shared config
// names), with the credentials of the AWS SDK's default chain: the
// environment (AWS_ACCESS_KEY_ID, …), the shared config and credentials
// files and their profiles (SSO included), web identity (EKS IRSA), EKS
// Pod Identity and ECS task roles, and the EC2 instance role. They are
// found at the first call and kept, and refreshed shortly before they
// expire; credentials that cannot be found are looked for again at a
// later call, not before retryFind.
func AWSSigner(region string) Signer { return &awsSigner{region: region} }

type awsSigner struct {
	region string
	chain  found[aws.Config]
}

// awsCredentials are what an AWS signature is made with: the
// credentials and the region.
type awsCredentials struct {
	creds  aws.Credentials
	region string
}

func (s *awsSigner) Credentials(ctx context.Context) (any, error) {
	cfg, err := s.chain.get(func() (aws.Config, error) { return loadChain(ctx, s.region) })
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, tokenTimeout)
	defer cancel()
	c, err := cfg.Credentials.Retrieve(ctx) // cached, and refreshed before it expires
	if err != nil {
		return nil, fmt.Errorf("aws credentials: %w", err)
	}
	return awsCredentials{creds: c, region: cfg.Region}, nil
}

// loadChain loads the default credentials chain, for region ("" for the
// environment's).
func loadChain(ctx context.Context, region string) (aws.Config, error) {
	ctx, cancel := context.WithTimeout(ctx, tokenTimeout)
	defer cancel()
	var opts []func(*config.LoadOptions) error
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err == nil && cfg.Region == "" {
		err = fmt.Errorf("no region: set the upstream's region, or AWS_REGION")
	}
	if err != nil {
		return cfg, fmt.Errorf("aws credentials: %w", err)
	}
	return cfg, nil
}

func (s *awsSigner) Sign(req *http.Request, body []byte, credentials any) error {
	c := credentials.(awsCredentials)
	sum := sha256.Sum256(body)
	return v4.NewSigner().SignHTTP(req.Context(), c.creds, req, hex.EncodeToString(sum[:]), AWSService, c.region, time.Now())
}

// RegionOf is the region an AWS endpoint's host names
// (bedrock-runtime.us-east-1.amazonaws.com: us-east-1), "" for another
// host.
func RegionOf(host string) string {
	host, _, _ = strings.Cut(host, ":")
	parts := strings.Split(host, ".")
	if len(parts) >= 4 && strings.HasSuffix(host, ".amazonaws.com") {
		return parts[len(parts)-3]
	}
	return ""
}
