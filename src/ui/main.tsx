// The dashboard's entry point (the pages follow in the next commit).
import { render } from 'preact'

render(<p>gw dashboard</p>, document.getElementById('root') as HTMLElement)
