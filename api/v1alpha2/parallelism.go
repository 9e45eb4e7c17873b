package v1alpha2

// IsDataParallel reports whether data parallelism is set.
func (p *ParallelismSpec) IsDataParallel() bool {
	return p != nil && (positive(p.Data) || positive(p.DataLocal))
}

// IsPipelineParallel reports whether pipeline parallelism is set.
func (p *ParallelismSpec) IsPipelineParallel() bool {
	return p != nil && positive(p.Pipeline)
}

// Size is the number of pods in one multi-node group: data/dataLocal for data
// parallelism, pipeline for pipeline parallelism. It is nil when neither is set.
func (p *ParallelismSpec) Size() *int32 {
	switch {
	case p.IsDataParallel():
		data, local := deref(p.Data), deref(p.DataLocal)
		size := int32(1)
		if data > 0 && local > 0 {
			size = max(data/local, 1)
		}
		return &size
	case p.IsPipelineParallel():
		size := *p.Pipeline
		return &size
	default:
		return nil
	}
}

// TotalSize is Size with 1 for a workload that is not multi-node.
func (p *ParallelismSpec) TotalSize() int32 {
	if s := p.Size(); s != nil {
		return *s
	}
	return 1
}

func positive(v *int32) bool { return v != nil && *v > 0 }

func deref(v *int32) int32 {
	if v == nil {
		return 0
	}
	return *v
}
