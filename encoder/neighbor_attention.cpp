// Masked multi-head attention on the CPU that visits only the allowed (query, key) pairs.
//
// The maths is that of encoder/attention.py's reference_attention; what differs is the work.
// A dense kernel (SDPA) computes every one of the Nq x Nk scores and throws away the masked
// ones: with 9 neighbours of 256 nodes that is 96% of them. Here each query reads the list of its
// allowed keys and computes scores, softmax and the weighted sum over those alone:
// O(Nq x degree x D) instead of O(Nq x Nk x D).
//
// Layout: rows of nodes with their heads, as MultiHeadAttention's projections give them (no copy):
//   Q [Rq,H,d], K and V [Rk,H,d], contiguous. A padded batch [B,N,H,d] is B * N rows; a packed
//   batch (encoder/packing.py) has one row per real node, the batch one graph of B parts.
//   The allowed pairs in CSR form: the keys of query row r are keys[offsets[r] : offsets[r + 1]],
//   rows of K in ascending order (csr_from_mask makes them from a padded batch's [B,Nq,Nk] mask).
//   query_graphs [G+1] splits the query rows into graphs (rows query_graphs[g] to
//   query_graphs[g + 1] - 1), and a query of graph g may attend only to keys of graph g.
//   forward  -> out [Rq,H,d] and the pairs' attention probabilities p [E,H], kept for the backward.
//               A query with no allowed key has out = 0, so nothing flows back through it.
//   backward -> dQ, dK, dV from p, with dS = p (dO . v_key - dO . out), the softmax's gradient
//               (sum_keys p dO . v_key = dO . out, as in FlashAttention).
//
// Sums run in at::opmath_type (float for fp16 / bf16 / fp32, double for fp64). The forward is
// parallel over query rows: every query writes only its own row. The backward is parallel over
// graphs, because a key's dK and dV gather from every query that attends to it. Neither split
// changes an operation's order, so the numbers do not depend on the thread count.
// Head dim 16 (the reference's 128 / 8, this project's 64 / 4) is compiled as a constant, which
// lets the compiler unroll the per-head loops: 1.3x the speed of the general loop on the dev VM.
//
// Only the headers the kernel uses, and torch's operator registry (torch.ops.neighbor_attention)
// rather than pybind11: with the whole of <torch/extension.h> the first build took 54-58 s on the
// AVX2 dev VM, with these 18-20 s (docs/performance.md, "The neighbour kernel").
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace {

template <typename acc_t, typename scalar_t>
acc_t dot(const scalar_t* a, const scalar_t* b, int64_t n) {
  acc_t sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t c = 0; c < n; ++c) sum += acc_t(a[c]) * acc_t(b[c]);
  return sum;
}

template <typename acc_t, typename scalar_t>
void add_scaled(acc_t* into, acc_t weight, const scalar_t* x, int64_t n) {
#pragma omp simd
  for (int64_t c = 0; c < n; ++c) into[c] += weight * acc_t(x[c]);
}

void check_rows(const at::Tensor& Q, const at::Tensor& K, const at::Tensor& V, const at::Tensor& offsets,
                const at::Tensor& keys) {
  TORCH_CHECK(Q.device().is_cpu(), "neighbour attention runs on the CPU, got Q on ", Q.device());
  TORCH_CHECK(Q.dim() == 3 && K.dim() == 3 && V.dim() == 3, "Q, K, V must be [rows,H,d]");
  TORCH_CHECK(K.sizes() == V.sizes(), "K and V must have one shape, got ", K.sizes(), " and ", V.sizes());
  TORCH_CHECK(Q.size(1) == K.size(1) && Q.size(2) == K.size(2),
              "Q ", Q.sizes(), " and K ", K.sizes(), " must agree in H and d");
  TORCH_CHECK(Q.scalar_type() == K.scalar_type() && K.scalar_type() == V.scalar_type(), "Q, K, V: one dtype");
  TORCH_CHECK(Q.is_contiguous() && K.is_contiguous() && V.is_contiguous(), "Q, K, V must be contiguous");
  TORCH_CHECK(offsets.scalar_type() == at::kLong && keys.scalar_type() == at::kLong && offsets.is_contiguous() &&
                  keys.is_contiguous(), "offsets and keys must be contiguous int64");
  TORCH_CHECK(offsets.dim() == 1 && offsets.size(0) == Q.size(0) + 1,
              "offsets must be [rows of Q + 1] = [", Q.size(0) + 1, "], got ", offsets.sizes());
  TORCH_CHECK(keys.dim() == 1 && keys.size(0) == offsets[-1].item<int64_t>(),
              "keys must hold offsets[-1] = ", offsets[-1].item<int64_t>(), " entries, got ", keys.sizes());
}

// The allowed pairs of a padded batch's mask [B,Nq,Nk] in CSR form over its rows b * Nq + i:
// (offsets [B*Nq+1], keys [E]), each key the row b * Nk + j of K, ascending within a query.
std::vector<at::Tensor> csr_from_mask(const at::Tensor& mask) {
  TORCH_CHECK(mask.scalar_type() == at::kBool && mask.is_contiguous() && mask.dim() == 3,
              "mask must be a contiguous bool [B,Nq,Nk], got ", mask.sizes());
  const int64_t Nq = mask.size(1), Nk = mask.size(2), rows = mask.size(0) * Nq;
  at::Tensor offsets = at::empty({rows + 1}, mask.options().dtype(at::kLong));
  const bool* allowed = mask.const_data_ptr<bool>();
  int64_t* offset = offsets.mutable_data_ptr<int64_t>();
  offset[0] = 0;
  at::parallel_for(0, rows, 64, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) offset[r + 1] = std::count(allowed + r * Nk, allowed + (r + 1) * Nk, true);
  });
  for (int64_t r = 0; r < rows; ++r) offset[r + 1] += offset[r];
  at::Tensor keys = at::empty({offset[rows]}, offsets.options());
  int64_t* key = keys.mutable_data_ptr<int64_t>();
  at::parallel_for(0, rows, 64, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t first_key = (r / Nq) * Nk;
      for (int64_t j = 0, e = offset[r]; e < offset[r + 1]; ++j) {  // no branch: write j, keep it if allowed
        key[e] = first_key + j;
        e += allowed[r * Nk + j];
      }
    }
  });
  return {offsets, keys};
}

// -> (out [Rq,H,d], p [E,H]): the attention probabilities of every allowed pair, for the backward.
template <int64_t kHeadDim>
std::vector<at::Tensor> forward_impl(const at::Tensor& Q, const at::Tensor& K, const at::Tensor& V,
                                     const at::Tensor& offsets, const at::Tensor& keys, double scale) {
  check_rows(Q, K, V, offsets, keys);
  const int64_t rows = Q.size(0), H = Q.size(1), d = kHeadDim ? kHeadDim : Q.size(2);
  at::Tensor out = at::empty_like(Q);
  at::Tensor probs = at::empty({keys.size(0), H}, Q.options().dtype(at::toOpMathType(Q.scalar_type())));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, Q.scalar_type(), "neighbor_attention_forward", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const scalar_t *q = Q.const_data_ptr<scalar_t>(), *k = K.const_data_ptr<scalar_t>(),
                   *v = V.const_data_ptr<scalar_t>();
    const int64_t *offset = offsets.const_data_ptr<int64_t>(), *key = keys.const_data_ptr<int64_t>();
    scalar_t* o = out.mutable_data_ptr<scalar_t>();
    acc_t* p = probs.mutable_data_ptr<acc_t>();
    at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
      std::vector<acc_t> top(H), norm(H), row(H * d);
      for (int64_t r = begin; r < end; ++r) {
        const int64_t first = offset[r], last = offset[r + 1];
        const scalar_t* q_i = q + r * H * d;
        std::fill(top.begin(), top.end(), -std::numeric_limits<acc_t>::infinity());
        for (int64_t e = first; e < last; ++e) {  // scores s = scale q . k
          const scalar_t* k_j = k + key[e] * H * d;
          for (int64_t h = 0; h < H; ++h) {
            p[e * H + h] = acc_t(scale) * dot<acc_t>(q_i + h * d, k_j + h * d, d);
            top[h] = std::max(top[h], p[e * H + h]);
          }
        }
        std::fill(norm.begin(), norm.end(), acc_t(0));
        for (int64_t e = first; e < last; ++e) {  // softmax over the allowed keys
          for (int64_t h = 0; h < H; ++h) norm[h] += (p[e * H + h] = std::exp(p[e * H + h] - top[h]));
        }
        std::fill(row.begin(), row.end(), acc_t(0));
        for (int64_t e = first; e < last; ++e) {  // out = sum p v; a row with no key stays 0
          const scalar_t* v_j = v + key[e] * H * d;
          for (int64_t h = 0; h < H; ++h) {
            p[e * H + h] /= norm[h];
            add_scaled(row.data() + h * d, p[e * H + h], v_j + h * d, d);
          }
        }
        for (int64_t c = 0; c < H * d; ++c) o[r * H * d + c] = scalar_t(row[c]);
      }
    });
  });
  return {out, probs};
}

// -> (dQ, dK, dV), with dS = p (dO . v - dO . out) the gradient of each score:
// dQ_i = scale sum_e dS_e K_key(e), dK_j += scale dS_e Q_i, dV_j += p_e dO_i.
template <int64_t kHeadDim>
std::vector<at::Tensor> backward_impl(const at::Tensor& dout, const at::Tensor& Q, const at::Tensor& K,
                                      const at::Tensor& V, const at::Tensor& out, const at::Tensor& offsets,
                                      const at::Tensor& keys, const at::Tensor& probs,
                                      const at::Tensor& query_graphs, double scale) {
  TORCH_CHECK(dout.sizes() == Q.sizes() && dout.is_contiguous() && dout.scalar_type() == Q.scalar_type(),
              "the output's gradient must be contiguous, shaped and typed as Q");
  TORCH_CHECK(query_graphs.dim() == 1 && query_graphs.scalar_type() == at::kLong && query_graphs.is_contiguous() &&
                  query_graphs[0].item<int64_t>() == 0 && query_graphs[-1].item<int64_t>() == Q.size(0),
              "query_graphs must be contiguous int64 from 0 to the rows of Q (", Q.size(0), ")");
  const int64_t G = query_graphs.size(0) - 1, H = Q.size(1), d = kHeadDim ? kHeadDim : Q.size(2);
  const auto acc_type = at::toOpMathType(Q.scalar_type());
  at::Tensor dQ = at::empty(Q.sizes(), Q.options().dtype(acc_type));
  at::Tensor dK = at::zeros(K.sizes(), K.options().dtype(acc_type));  // rows of no graph stay 0
  at::Tensor dV = at::zeros(V.sizes(), V.options().dtype(acc_type));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, Q.scalar_type(), "neighbor_attention_backward", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const scalar_t *q = Q.const_data_ptr<scalar_t>(), *k = K.const_data_ptr<scalar_t>(),
                   *v = V.const_data_ptr<scalar_t>(), *o = out.const_data_ptr<scalar_t>(),
                   *g = dout.const_data_ptr<scalar_t>();
    const int64_t *offset = offsets.const_data_ptr<int64_t>(), *key = keys.const_data_ptr<int64_t>(),
                  *query_rows = query_graphs.const_data_ptr<int64_t>();
    const acc_t* p = probs.const_data_ptr<acc_t>();
    acc_t *dq = dQ.mutable_data_ptr<acc_t>(), *dk = dK.mutable_data_ptr<acc_t>(), *dv = dV.mutable_data_ptr<acc_t>();
    at::parallel_for(0, G, 1, [&](int64_t begin, int64_t end) {  // a graph's keys gather from its queries
      std::vector<acc_t> delta(H);
      for (int64_t r = query_rows[begin]; r < query_rows[end]; ++r) {
        const int64_t at_i = r * H * d;
        for (int64_t h = 0; h < H; ++h) delta[h] = dot<acc_t>(g + at_i + h * d, o + at_i + h * d, d);
        std::fill(dq + at_i, dq + at_i + H * d, acc_t(0));
        for (int64_t e = offset[r]; e < offset[r + 1]; ++e) {
          const int64_t at_j = key[e] * H * d;
          for (int64_t h = 0; h < H; ++h) {
            const int64_t ih = at_i + h * d, jh = at_j + h * d;
            const acc_t dS = p[e * H + h] * (dot<acc_t>(g + ih, v + jh, d) - delta[h]);
            add_scaled(dq + ih, acc_t(scale) * dS, k + jh, d);
            add_scaled(dk + jh, acc_t(scale) * dS, q + ih, d);
            add_scaled(dv + jh, p[e * H + h], g + ih, d);
          }
        }
      }
    });
  });
  const auto dtype = Q.scalar_type();
  return {dQ.to(dtype), dK.to(dtype), dV.to(dtype)};
}

std::vector<at::Tensor> forward(const at::Tensor& Q, const at::Tensor& K, const at::Tensor& V,
                                const at::Tensor& offsets, const at::Tensor& keys, double scale) {
  return Q.size(2) == 16 ? forward_impl<16>(Q, K, V, offsets, keys, scale)
                         : forward_impl<0>(Q, K, V, offsets, keys, scale);
}

std::vector<at::Tensor> backward(const at::Tensor& dout, const at::Tensor& Q, const at::Tensor& K,
                                 const at::Tensor& V, const at::Tensor& out, const at::Tensor& offsets,
                                 const at::Tensor& keys, const at::Tensor& probs, const at::Tensor& query_graphs,
                                 double scale) {
  return Q.size(2) == 16 ? backward_impl<16>(dout, Q, K, V, out, offsets, keys, probs, query_graphs, scale)
                         : backward_impl<0>(dout, Q, K, V, out, offsets, keys, probs, query_graphs, scale);
}

}  // namespace

// torch.ops.neighbor_attention.<name>; the schemas are read off the C++ signatures.
TORCH_LIBRARY(neighbor_attention, m) {
  m.def("csr_from_mask", &csr_from_mask);  // (mask [B,Nq,Nk]) -> [offsets [B*Nq+1], keys [E]]
  m.def("forward", &forward);              // (Q, K, V, offsets, keys, scale) -> [out, probs]
  m.def("backward", &backward);            // (dout, Q, K, V, out, offsets, keys, probs, query_graphs, scale)
                                           //   -> [dQ, dK, dV]
}
