# Sourced by the scripts that pack and check a GPU bundle (gpu_bundle.sh, mpi_runtime.sh,
# check_bundle.sh): which shared libraries a bundle need not carry, because the lent GPU machine
# has them (the C/C++ runtime, newer there than here, and the GPU stack, whose driver decides
# which versions work: CUDA's runtime, cuBLAS, NCCL and cuDNN come there with the CUDA toolkit or
# PyTorch's wheels, and scripts/gpu_check.sh finds them), and the copying of the others.

on_gpu_machine() {  # on_gpu_machine SONAME: whether the GPU machine has it
  case "$1" in
    linux-vdso.so*|ld-linux*|libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|libstdc++.so*|libgcc_s.so*) return 0 ;;
    libcuda.so*|libcudart.so*|libcublas.so*|libcublasLt.so*|libnccl.so*|libcudnn*.so*|libnvidia*) return 0 ;;
  esac
  return 1
}

# gather_libs FOLDER OBJECT...: copies into FOLDER, under its soname, each library that the
# programs or libraries OBJECT load and the GPU machine lacks (one FOLDER holds already is kept).
gather_libs() {
  local dest=$1 o
  shift
  mkdir -p "$dest"
  for o in "$@"; do ldd "$o" 2>/dev/null | awk '/=> \// {print $1, $3}'; done | sort -u |
    while read -r name path; do
      on_gpu_machine "$name" || [ -e "$dest/$name" ] || cp -L "$path" "$dest/$name"
    done
}
