"""The kernels the model families share: the compiled CPU kernels (C++ sources beside the modules
that build and load them: fused_cpu for the paper's fused encoder + pooling, selective_scan_cpu
for Mamba's scan, linear_attention_cpu for the GLA and DeltaNet recurrences), Mamba's selective
scan in its three forms (selective_scan), the causal FFT convolution of S4D, Hyena and BaseConv
(fft_conv), and the chunking of the linear-attention mixers (chunks)."""
