#!/usr/bin/env bash
# Packs this machine's OpenMPI runtime into a folder that starts on a machine with no MPI
# installed (the lent GPU machines have none): mpirun and orted, the MPI libraries and every
# library they or their components load (less the C/C++ runtime, which every Linux has), the MCA
# components, the help files, the default MCA parameters, and PMIx's own components and help.
# `. FOLDER/env.sh` then points PATH, LD_LIBRARY_PATH and OpenMPI's and PMIx's install variables
# (OPAL_PREFIX and the folders OpenMPI would otherwise look for under the configured /usr) into
# the folder, wherever it was moved: nothing of an installed MPI is read.
#
#   scripts/mpi_runtime.sh FOLDER      (scripts/gpu_bundle.sh packs it as gpu-bundle/mpi-runtime.tar.gz;
#                                       scripts/check_bundle.sh starts it from a clean environment)
set -euo pipefail
OUT=${1:?usage: scripts/mpi_runtime.sh FOLDER}
command -v ompi_info >/dev/null || { echo "mpi_runtime: no OpenMPI here (ompi_info not found)" >&2; exit 1; }
dir() { ompi_info --path "$1" --parsable | sed -n "s/^path:$1://p"; }
bindir=$(dir bindir) pkglibdir=$(dir pkglibdir) pkgdatadir=$(dir pkgdatadir) sysconfdir=$(dir sysconfdir)
[ -x "$bindir/orterun" ] || { echo "mpi_runtime: no orterun in $bindir (OpenMPI 4 expected)" >&2; exit 1; }
pmix_lib=$(readlink -f "$(ldconfig -p | awk '/libpmix\.so\.2 / {print $NF; exit}')" 2>/dev/null || true)
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib" "$OUT/components" "$OUT/help" "$OUT/etc"
cp -L "$bindir/orterun" "$OUT/bin/mpirun"
cp -L "$bindir/orted" "$OUT/bin/"
cp -L "$pkglibdir"/*.so "$OUT/components/"
cp -L "$pkgdatadir"/*.txt "$OUT/help/"
cp -L "$sysconfdir"/openmpi-mca-params.conf "$OUT/etc/" 2>/dev/null || : >"$OUT/etc/openmpi-mca-params.conf"
objects=("$OUT"/bin/* "$OUT"/components/*.so)
if [ -n "$pmix_lib" ]; then  # an external PMIx (Debian's): its prefix holds lib/pmix and share/pmix
  pmix_prefix=$(dirname "$(dirname "$pmix_lib")")
  mkdir -p "$OUT/pmix/lib" "$OUT/pmix/share"
  cp -rL "$pmix_prefix/lib/pmix" "$OUT/pmix/lib/"
  cp -rL "$pmix_prefix/share/pmix" "$OUT/pmix/share/"
  cp -L "$pmix_prefix"/share/pmix-mca-params.conf "$OUT/pmix/share/" 2>/dev/null || true
  objects+=("$OUT"/pmix/lib/pmix/*.so)
fi
# Every library these load, each under its soname, less those the GPU machine has.
. "$(dirname "$0")/bundle_libs.sh"
gather_libs "$OUT/lib" "${objects[@]}"
missing=$(for o in "${objects[@]}"; do LD_LIBRARY_PATH=$OUT/lib ldd "$o" 2>/dev/null | grep "not found" || true; done | sort -u)
[ -z "$missing" ] || { echo "mpi_runtime: libraries not found here: $missing" >&2; exit 1; }
cat >"$OUT/env.sh" <<'ENV'
# Sourced (`. env.sh`): this OpenMPI runtime, wherever its folder now is, and no other MPI.
FLEXTP_MPI_HOME=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH=$FLEXTP_MPI_HOME/bin${PATH:+:$PATH}
export LD_LIBRARY_PATH=$FLEXTP_MPI_HOME/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OPAL_PREFIX=$FLEXTP_MPI_HOME OPAL_EXEC_PREFIX=$FLEXTP_MPI_HOME OPAL_BINDIR=$FLEXTP_MPI_HOME/bin
export OPAL_LIBDIR=$FLEXTP_MPI_HOME/lib OPAL_PKGLIBDIR=$FLEXTP_MPI_HOME/components
export OPAL_DATADIR=$FLEXTP_MPI_HOME OPAL_PKGDATADIR=$FLEXTP_MPI_HOME/help OPAL_SYSCONFDIR=$FLEXTP_MPI_HOME/etc
export PMIX_INSTALL_PREFIX=$FLEXTP_MPI_HOME/pmix
export PMIX_MCA_mca_base_component_path=$FLEXTP_MPI_HOME/pmix/lib/pmix
# One machine: ranks start as mpirun's children, with no ssh or rsh (none on the GPU machines).
export OMPI_MCA_plm=isolated
ENV
du -sh "$OUT" | sed 's/^/mpi_runtime: /'
