// A time-series chart (uPlot) sized to its container, redrawn when its data changes.

import { useEffect, useRef } from 'preact/hooks'
import uPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'

export interface Series {
  label: string
  values: (number | null)[]
}

const COLORS = ['#3b82f6', '#f59e0b', '#10b981', '#ef4444', '#8b5cf6', '#06b6d4', '#ec4899', '#84cc16', '#64748b']

export function TimeChart({ title, times, series, format }: { title: string; times: number[]; series: Series[]; format?: (v: number) => string }) {
  const box = useRef<HTMLDivElement>(null)
  useEffect(() => {
    const el = box.current
    if (!el) return
    const dark = matchMedia('(prefers-color-scheme: dark)').matches
    const axis = { stroke: dark ? '#cbd5e1' : '#334155', grid: { stroke: dark ? '#334155' : '#e2e8f0' }, ticks: { stroke: dark ? '#334155' : '#e2e8f0' } }
    const fmt = format ?? ((v: number) => v.toLocaleString())
    const plot = new uPlot(
      {
        width: Math.max(el.clientWidth, 280),
        height: 200,
        series: [
          {},
          ...series.map((s, i) => ({
            label: s.label,
            stroke: COLORS[i % COLORS.length],
            width: 2,
            spanGaps: false,
            // Sparse series (percentiles are null in empty buckets) have lone values with no line to draw: dots.
            points: { show: s.values.filter((v) => v !== null).length < times.length / 2, size: 5 },
            value: (_u: uPlot, v: number | null) => (v == null ? '—' : fmt(v)),
          })),
        ],
        axes: [axis, { ...axis, size: 80, values: (_u: uPlot, vals: number[]) => vals.map(fmt) }],
        legend: { live: true },
        cursor: { drag: { x: false, y: false } },
      },
      [times.map((t) => t / 1000), ...series.map((s) => s.values)] as uPlot.AlignedData,
      el,
    )
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(el.clientWidth, 280), height: 200 }))
    resize.observe(el)
    return () => {
      resize.disconnect()
      plot.destroy()
    }
  }, [times, series])
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <div ref={box} role="img" aria-label={title} />
    </figure>
  )
}
