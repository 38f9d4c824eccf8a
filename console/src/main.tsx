// Entry point: the stylesheets are bundled into one CSS file beside the script (the CSP allows no inline style).
import 'uplot/dist/uPlot.min.css';
import './styles.css';
import { render } from 'preact';
import { App } from './app.tsx';

render(<App />, document.getElementById('app')!);
